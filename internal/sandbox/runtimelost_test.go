package sandbox_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

// TestCheckRuntime: a sandbox whose runtime answers stays RUNNING; one whose runtime was
// killed is ERROR after the check, at once, saying its runtime exited, and the check says so
// from then on.
func TestCheckRuntime(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")
	if err := s.CheckRuntime(ctx, "alice", sb.ID); err != nil {
		t.Fatalf("check of a runtime that answers: %v", err)
	}
	if err := s.CheckRuntime(ctx, "bob", sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("check of another user's sandbox: %v, want ErrNotFound", err)
	}
	pid := runtimePID(t, sb)
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the runtime to end", func() bool { return pidGone(pid) })
	for range 2 {
		err := s.CheckRuntime(ctx, "alice", sb.ID)
		var nr *sandbox.NotRunningError
		if !errors.As(err, &nr) || nr.Status != sandbox.StatusError || !strings.Contains(nr.Detail, "runtime exited") {
			t.Fatalf("check of a killed runtime: %v, want ERROR saying the runtime exited", err)
		}
	}
	got, err := s.Get(ctx, "alice", sb.ID)
	must(t, err)
	if got.Status != sandbox.StatusError || !strings.Contains(got.Detail, "runtime exited") {
		t.Fatalf("sandbox after the check: %s %q", got.Status, got.Detail)
	}
	// The backend reaps its runtime; a closed backend would leave it a zombie.
	waitFor(t, "the killed runtime to be reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err != nil
	})
}
