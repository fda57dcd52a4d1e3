package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime"
)

// TestSandboxesRunTheRuntimeBuild: agentd installs the runtime-only build it carries into the
// data directory, and sandboxes run it; a restart reuses the installed file. That build
// serves only the runtime.
func TestSandboxesRunTheRuntimeBuild(t *testing.T) {
	t.Parallel()
	const key = "runtime-build-admin-key-0123"
	dir := newDataDir(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key})
	admin := s.client(key)
	sb := admin.startSandbox()

	installed, _ := filepath.Glob(filepath.Join(dir, "bin", runtime.BinaryPrefix+"*"))
	if len(installed) != 1 {
		t.Fatalf("runtime builds in the data directory: %v, want one", installed)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", runtimePID(t, dir, sb.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if exe != installed[0] {
		t.Fatalf("the sandbox runs %s, want the installed runtime build %s", exe, installed[0])
	}
	if fi, err := os.Stat(exe); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("installed runtime build: %v, %v; want mode r-xr-xr-x", fi.Mode(), err)
	}
	res, err := admin.runtimeClient(sb.ID).Run(t.Context(), runtimeCommand("echo from the runtime build"))
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Output, "from the runtime build") {
		t.Fatalf("command in the sandbox: %+v, %v", res, err)
	}

	out, err := exec.Command(exe, "version").Output()
	if err != nil || string(out) != "agentd "+agentdVersion+"\n" {
		t.Fatalf("runtime build's version: %q, %v", out, err)
	}
	stderr, err := exec.Command(exe, "serve", "--data-dir", t.TempDir()).CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(stderr), "serve is not in this build") {
		t.Fatalf("serve on the runtime build: exit %d, %s", exitCode(err), stderr)
	}

	before, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := s.stop(); code != 0 {
		t.Fatalf("agentd serve exited with %d", code)
	}
	// The runtime build of an earlier version, which the restarted server removes.
	older := filepath.Join(dir, "bin", runtime.BinaryPrefix+"0123456789abcdef")
	if err := os.WriteFile(older, []byte("an older runtime build"), 0o555); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key})
	after, err := os.Stat(exe)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("a restart replaced the installed runtime build (%v)", err)
	}
	if _, err := os.Stat(older); !os.IsNotExist(err) {
		t.Fatalf("the runtime build of an earlier version is still there (%v)", err)
	}
	admin = s.client(key)
	if got := admin.waitSandbox(sb.ID, "RUNNING"); got.ID != sb.ID {
		t.Fatalf("sandbox after the restart: %+v", got)
	}
}
