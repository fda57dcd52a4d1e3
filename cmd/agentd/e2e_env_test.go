package main_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// TestSandboxEnvironmentIsClean: nothing of the server's environment reaches a sandbox: not
// its secrets, not the admin key, not the runtime's own session key.
func TestSandboxEnvironmentIsClean(t *testing.T) {
	t.Parallel()
	const (
		key    = "env-admin-key-0123456789"
		secret = "s3cret-value"
	)
	dir := newDataDir(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key, "AGENTD_TEST_SECRET=" + secret, "OPENAI_API_KEY=sk-" + secret})
	admin := s.client(key)
	sb := admin.startSandbox()
	sessionKey := *admin.sandbox(sb.ID).SessionAPIKey

	res, err := admin.runtimeClient(sb.ID).Run(t.Context(), runtimeCommand("env"))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env in the sandbox: %+v, %v", res, err)
	}
	// The command did run: its environment is the sandbox's.
	if !strings.Contains(res.Output, "PATH=") || !strings.Contains(res.Output, "HOME=") {
		t.Fatalf("env printed no environment:\n%s", res.Output)
	}
	// What the runtime itself was started with, as the kernel keeps it.
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", runtimePID(t, dir, sb.ID)))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{secret, "AGENTD_TEST_SECRET", "OPENAI_API_KEY", key, "AGENTD_ADMIN_KEY", runtimeclient.KeyEnv, sessionKey} {
		if strings.Contains(res.Output, leak) {
			t.Errorf("the sandbox's environment holds %q:\n%s", leak, res.Output)
		}
		if leak != runtimeclient.KeyEnv && leak != sessionKey && strings.Contains(string(environ), leak) {
			t.Errorf("the runtime process was started with %q in its environment", leak)
		}
	}
}

// TestSandboxCannotReadRuntimeKey: a command in the sandbox cannot read the runtime's session
// key from the runtime's initial environment either (/proc/<runtime pid>/environ, which
// os.Unsetenv does not change).
func TestSandboxCannotReadRuntimeKey(t *testing.T) {
	t.Parallel()
	const key = "environ-admin-key-0123456789"
	dir := newDataDir(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key})
	admin := s.client(key)
	sb := admin.startSandbox()
	sessionKey := *admin.sandbox(sb.ID).SessionAPIKey
	pid := runtimePID(t, dir, sb.ID)
	// The command's parent is the runtime; the test checks that before reading.
	res, err := admin.runtimeClient(sb.ID).Run(t.Context(), runtimeCommand(`echo "ppid=$PPID"; tr '\0' '\n' < /proc/$PPID/environ`))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read the runtime's environ: %+v, %v", res, err)
	}
	if !strings.Contains(res.Output, fmt.Sprintf("ppid=%d\n", pid)) || !strings.Contains(res.Output, "PATH=") {
		t.Fatalf("the command did not read the runtime's (pid %d) environ:\n%s", pid, res.Output)
	}
	if strings.Contains(res.Output, sessionKey) {
		t.Fatal("a command in a sandbox reads the runtime's session key from /proc/<runtime pid>/environ")
	}
}
