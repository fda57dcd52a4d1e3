//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/libc"
)

// TestTrimUnmapsWhatSQLiteFreed: a region that libc's malloc mapped stays mapped once freed,
// kept for reuse, until trimSQLiteMemory unmaps it: the linked allocator is libc's own.
func TestTrimUnmapsWhatSQLiteFreed(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	// The allocator keeps a freed region only while what it keeps is under a bound: from
	// nothing kept, it keeps this one.
	if err := trimSQLiteMemory(); err != nil {
		t.Fatal(err)
	}
	// A size SQLite does not ask for, so that nothing else takes the freed region back.
	p := libc.Xmalloc(tls, 3<<20+12345)
	if p == 0 {
		t.Fatal("malloc failed")
	}
	libc.Xfree(tls, p)
	if !isMapped(t, p) {
		t.Fatal("the freed region is unmapped before the trim: the allocator no longer keeps freed regions, and the trim may be needless")
	}
	if err := trimSQLiteMemory(); err != nil {
		t.Fatal(err)
	}
	if isMapped(t, p) {
		t.Fatal("the freed region is still mapped after the trim")
	}
}

// isMapped reports whether address p is in one of the process's mappings.
func isMapped(t *testing.T, p uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var start, end uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%x-%x", &start, &end); err != nil {
			t.Fatalf("/proc/self/maps: %q: %v", sc.Text(), err)
		}
		if start <= p && p < end {
			return true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestLibcAllocatorDeclarations checks that the variables libcmem.go links to are declared in
// the libc that go.mod names as libcmem.go declares them, and that libcmem.go is built where
// libc's malloc uses them (mem_musl.go). A libc that changes them fails this test rather
// than corrupting memory.
func TestLibcAllocatorDeclarations(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "modernc.org/libc").Output()
	if err != nil {
		t.Fatalf("go list modernc.org/libc: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "libc_musl.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"allocator": "memory.Allocator", "allocatorMu": "sync.Mutex"}
	got := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for _, n := range v.Names {
				if _, ok := want[n.Name]; ok && v.Type != nil {
					got[n.Name] = typeName(v.Type)
				}
			}
		}
	}
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("libc declares %s as %q, libcmem.go as %q", name, got[name], typ)
		}
	}
	imported := false
	for _, i := range f.Imports {
		imported = imported || i.Path.Value == `"modernc.org/memory"`
	}
	if !imported {
		t.Error("libc_musl.go does not import modernc.org/memory")
	}
	malloc, err := os.ReadFile(filepath.Join(dir, "mem_musl.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(malloc), "allocatorMu.Lock()") {
		t.Error("libc's malloc (mem_musl.go) does not lock allocatorMu")
	}
	theirs := buildConstraint(t, filepath.Join(dir, "mem_musl.go"))
	ours := buildConstraint(t, "libcmem.go")
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
		for _, arch := range []string{"amd64", "arm64", "loong64", "ppc64le", "s390x", "riscv64", "386", "arm", "mips64le"} {
			for _, extra := range [][]string{nil, {"libc.membrk"}, {"libc.memgrind"}} {
				tags := map[string]bool{goos: true, arch: true}
				for _, e := range extra {
					tags[e] = true
				}
				has := func(tag string) bool { return tags[tag] }
				if theirs.Eval(has) != ours.Eval(has) {
					t.Errorf("%s/%s %v: mem_musl.go built %v, libcmem.go %v", goos, arch, extra, theirs.Eval(has), ours.Eval(has))
				}
			}
		}
	}
}

// typeName writes a variable's type as the source spells it (a name, or package.Name).
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return typeName(e.X) + "." + e.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

// buildConstraint returns the //go:build line of the file at path.
func buildConstraint(t *testing.T, path string) constraint.Expr {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if constraint.IsGoBuild(line) {
			e, err := constraint.Parse(line)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return e
		}
	}
	t.Fatalf("%s has no //go:build line", path)
	return nil
}
