//go:build !agentd_runtime_only

package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the import path of agentd's module, and moduleRoot its directory from this
// package's.
const (
	module     = "github.com/agentd/agentd"
	moduleRoot = "../.."
)

// concrete are the trees of the concrete implementations: stores and sandbox backends. Only
// the composition root (cmd/agentd) chooses among them; everything else takes interfaces.
var concrete = []string{
	module + "/internal/store/sqlite",
	module + "/internal/store/postgres",
	module + "/internal/sandbox/process",
	module + "/internal/sandbox/bwrap",
	module + "/internal/sandbox/docker",
	module + "/internal/sandbox/kubernetes",
}

// compositionRoots may import concrete implementations: the binary, and the benchmark, which
// measures each backend against its raw primitive.
var compositionRoots = []string{module + "/cmd/agentd", module + "/cmd/agentd-bench"}

func inTree(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

func isConcrete(pkg string) bool {
	return slices.ContainsFunc(concrete, func(root string) bool { return inTree(pkg, root) })
}

// isTestSupport reports a package that exists for tests (storetest, sandboxtest, apptest):
// it may build the real thing, and the binary never links it (TestImportGraph checks).
func isTestSupport(pkg string) bool { return strings.HasSuffix(path.Base(pkg), "test") }

// imports lists each package's non-test imports, as `go list` gives them, for the packages
// pattern names, with the build tags.
func imports(t *testing.T, tags string, patterns ...string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = moduleRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	return graph
}

// TestImportGraph: no package but a composition root (and a concrete implementation's own
// tree, and packages for tests) imports a concrete store or sandbox backend, so that the
// services and the API are written against interfaces; and the binary links no package
// for tests.
func TestImportGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	for pkg, imps := range imports(t, "", "./...") {
		if slices.Contains(compositionRoots, pkg) || isConcrete(pkg) || isTestSupport(pkg) {
			continue
		}
		for _, imp := range imps {
			if isConcrete(imp) {
				t.Errorf("%s imports the concrete %s: take an interface, and let cmd/agentd choose", pkg, imp)
			}
		}
	}
	for _, tags := range []string{"", "agentd_runtime_only"} {
		cmd := exec.Command("go", "list", "-tags", tags, "-deps", "./cmd/agentd")
		cmd.Dir = moduleRoot
		deps, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (tags %q): %v", tags, err)
		}
		for dep := range strings.FieldsSeq(string(deps)) {
			if strings.HasPrefix(dep, module+"/") && isTestSupport(dep) {
				t.Errorf("the binary (tags %q) links %s, a package for tests", tags, dep)
			}
		}
	}
}

// TestImportGraphCatches: the rule above holds for a package that breaks it, so that the
// test cannot pass for want of looking.
func TestImportGraphCatches(t *testing.T) {
	for _, tt := range []struct {
		pkg  string
		want bool
	}{
		{module + "/internal/store/sqlite", true},
		{module + "/internal/store/sqlite/migrations", true},
		{module + "/internal/sandbox/bwrap", true},
		{module + "/internal/store/sqlitefoo", false},
		{module + "/internal/sandbox", false},
		{module + "/internal/store", false},
	} {
		if got := isConcrete(tt.pkg); got != tt.want {
			t.Errorf("isConcrete(%s) = %v, want %v", tt.pkg, got, tt.want)
		}
	}
	graph := imports(t, "", "./internal/app", "./internal/app/apptest")
	if imps := graph[module+"/internal/app/apptest"]; !slices.ContainsFunc(imps, isConcrete) {
		t.Errorf("apptest's imports %v hold no concrete store: the graph is not read", imps)
	}
}

// runtimeServer are the in-sandbox server's packages and what only it needs: the terminal
// and its pty. The control plane speaks to runtimes through runtimeclient and links none of
// them; only the binary (whose `agentd runtime` is the server) and packages for tests may.
var runtimeServer = []string{
	module + "/internal/runtime",
	module + "/internal/tool/terminal",
	"github.com/creack/pty",
}

// TestImportGraphRuntimeServer: no package but the composition roots, the server's own
// packages and packages for tests depends, directly or not, on the runtime server.
func TestImportGraphRuntimeServer(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	graph := imports(t, "", "./...")
	for _, pkg := range serverDependents(graph) {
		if slices.Contains(compositionRoots, pkg) || isTestSupport(pkg) {
			continue
		}
		t.Errorf("%s links the runtime server (%s): reach runtimes through runtimeclient", pkg, strings.Join(runtimeServer, ", "))
	}
}

// serverDependents lists the packages of graph outside runtimeServer that depend on one of
// its packages, directly or through others.
func serverDependents(graph map[string][]string) []string {
	memo := map[string]bool{}
	var links func(pkg string) bool
	links = func(pkg string) bool {
		if v, ok := memo[pkg]; ok {
			return v
		}
		memo[pkg] = false // a cycle cannot happen in Go; this only stops the recursion
		for _, imp := range graph[pkg] {
			if slices.Contains(runtimeServer, imp) || links(imp) {
				memo[pkg] = true
				return true
			}
		}
		return false
	}
	var out []string
	for pkg := range graph {
		if !slices.Contains(runtimeServer, pkg) && links(pkg) {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

// TestImportGraphRuntimeServerCatches: the rule above sees a dependency through another
// package.
func TestImportGraphRuntimeServerCatches(t *testing.T) {
	graph := map[string][]string{
		"a":                          {"b"},
		"b":                          {module + "/internal/runtime"},
		"c":                          {module + "/internal/runtime/runtimeclient"},
		module + "/internal/runtime": {"github.com/creack/pty"},
	}
	if got, want := serverDependents(graph), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("serverDependents = %v, want %v", got, want)
	}
	real := imports(t, "", "./internal/runtime")
	if !slices.Contains(real[module+"/internal/runtime"], module+"/internal/tool/terminal") {
		t.Errorf("the runtime server's imports %v lack the terminal: the graph is not read", real[module+"/internal/runtime"])
	}
}
