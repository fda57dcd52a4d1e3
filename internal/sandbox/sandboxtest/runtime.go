package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// EnvRuntime, set to "1", makes a test binary that calls RuntimeMain act as `agentd runtime`.
const EnvRuntime = "AGENTD_TEST_RUNTIME"

// RuntimeMain is the TestMain of a package whose tests start sandboxes: it runs the tests, or,
// when the binary was started as a sandbox runtime, serves as the runtime, or, when a runtime
// started it as a stdio MCP server, serves as that (see mcptest.Main). It does not return.
func RuntimeMain(m *testing.M) {
	RuntimeMainWith(m, (*testing.M).Run)
}

// RuntimeMainWith is RuntimeMain that runs the tests with run (pgtest.Run, say, which gives
// them a PostgreSQL server).
func RuntimeMainWith(m *testing.M, run func(*testing.M) int) {
	mcptest.Main()
	// A pooled runtime starts without the spec's environment (EnvRuntime among it), which
	// its delivery brings: it is told by its subcommand and flag instead.
	pooled := len(os.Args) > 1 && os.Args[1] == "runtime" && slices.Contains(os.Args, sandbox.PooledFlag)
	if os.Getenv(EnvRuntime) == "1" || pooled {
		os.Exit(serveRuntime(os.Args[1:]))
	}
	os.Exit(run(m))
}

// serveRuntime runs runtime.Main with the arguments after "runtime" until SIGTERM or SIGINT.
func serveRuntime(args []string) int {
	i := slices.Index(args, "runtime")
	if i < 0 {
		fmt.Fprintf(os.Stderr, "%s=1 but no runtime subcommand in %q\n", EnvRuntime, args)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := runtime.Main(ctx, args[i+1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// RuntimeSpec returns a spec whose sandboxes run the test binary as their runtime.
func RuntimeSpec(id string) sandbox.Spec {
	return sandbox.Spec{
		ID:          id,
		Description: "the test binary as agentd runtime",
		Command:     []string{"agentd", "runtime"},
		InitialEnv:  map[string]string{EnvRuntime: "1"},
	}
}

// Binary returns the path of the running test binary, to give a backend as its agentd binary.
func Binary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	return exe
}

// ShortDir returns a fresh directory, removed when the test ends, with a path short enough
// for the unix sockets of sandboxes under it (t.TempDir paths grow with the test's name).
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
