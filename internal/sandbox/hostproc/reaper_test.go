package hostproc

import (
	"errors"
	"log/slog"
	"os/exec"
	"testing"
	"time"
)

// waitStat polls pid's stat until done reports true for it (or for its error).
func waitStat(t *testing.T, pid int, what string, done func(Stat, error) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if done(ReadStat(pid)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: %s did not happen", pid, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestReaper: a watched process that exits is reaped, not left a zombie; after Close the
// Reaper watches nothing.
func TestReaper(t *testing.T) {
	r := NewReaper(slog.New(slog.DiscardHandler))
	reaped := exec.Command("true")
	if err := reaped.Start(); err != nil {
		t.Fatal(err)
	}
	r.Watch(reaped)
	waitStat(t, reaped.Process.Pid, "reaping", func(_ Stat, err error) bool { return errors.Is(err, ErrNoProcess) })

	r.Close()
	r.Close()
	left := exec.Command("true")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	r.Watch(left)
	waitStat(t, left.Process.Pid, "exit", func(st Stat, err error) bool { return err == nil && st.Dead() })
	if err := left.Wait(); err != nil {
		t.Fatalf("the process left alone after Close: %v", err)
	}
}
