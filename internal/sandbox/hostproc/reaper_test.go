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
	const bound = time.Minute
	deadline := time.Now().Add(bound)
	for {
		st, err := ReadStat(pid)
		if done(st, err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: %s did not happen within %v (last state %q, %v)", pid, what, bound, st.State, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestReaper: a watched process that exits is reaped, not left a zombie; after Close the
// Reaper watches nothing.
func TestReaper(t *testing.T) {
	r := NewReaper(slog.New(slog.DiscardHandler))
	t.Cleanup(r.Close)
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
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = left.Wait()
		}
	})
	r.Watch(left)
	waitStat(t, left.Process.Pid, "exit", func(st Stat, err error) bool { return err == nil && st.Dead() })
	waited = true
	if err := left.Wait(); err != nil {
		t.Fatalf("the process left alone after Close: %v", err)
	}
}

// TestReaperCloseAfterExit: a watched process that has exited when Close comes is reaped,
// even when Close comes before the Reaper's turn. The rounds where the test sees the process
// a zombie before Close are the ones that can take that turn; a round where the Reaper was
// quicker checks nothing more.
func TestReaperCloseAfterExit(t *testing.T) {
	raced := 0
	for range 200 {
		r := NewReaper(slog.New(slog.DiscardHandler))
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Watch(cmd)
		pid := cmd.Process.Pid
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		zombie := false
		waitStat(t, pid, "exit", func(st Stat, err error) bool {
			zombie = err == nil && st.Dead()
			return zombie || errors.Is(err, ErrNoProcess)
		})
		r.Close()
		if !zombie {
			continue
		}
		raced++
		if st, err := ReadStat(pid); !errors.Is(err, ErrNoProcess) {
			_ = cmd.Wait()
			t.Fatalf("process %d exited before Close and is left unreaped after it (state %q, %v)", pid, st.State, err)
		}
	}
	t.Logf("%d of 200 rounds saw the process a zombie before Close", raced)
}
