package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// Pause stops every process of the sandbox's session and returns once all are stopped.
func (b *Backend) Pause(ctx context.Context, inst sandbox.Instance) error {
	st, err := b.running(inst)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	if err := stopSession(ctx, st.PID); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// Resume continues every process of the sandbox's session.
func (b *Backend) Resume(_ context.Context, inst sandbox.Instance) error {
	st, err := b.running(inst)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	if err := contSession(st.PID); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// running returns the state of inst if its runtime still runs.
func (b *Backend) running(inst sandbox.Instance) (instanceState, error) {
	st, ok, err := decodeState(inst)
	if err != nil {
		return instanceState{}, err
	}
	if !ok {
		return instanceState{}, fmt.Errorf("no runtime process recorded")
	}
	if _, alive, err := leader(st); err != nil {
		return instanceState{}, err
	} else if !alive {
		return instanceState{}, fmt.Errorf("runtime process %d is gone", st.PID)
	}
	return st, nil
}

// Inspect reports gone when the runtime process is dead or its pid now belongs to another
// process, paused when it is stopped, running otherwise.
func (b *Backend) Inspect(_ context.Context, inst sandbox.Instance) (sandbox.State, error) {
	st, ok, err := decodeState(inst)
	if err != nil {
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	}
	if !ok {
		return sandbox.StateGone, nil
	}
	p, alive, err := leader(st)
	switch {
	case err != nil:
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	case !alive:
		return sandbox.StateGone, nil
	case p.Stopped():
		return sandbox.StatePaused, nil
	default:
		return sandbox.StateRunning, nil
	}
}

// Destroy kills every process of the session, waits for the runtime to go, and removes the
// sandbox's directory. A sandbox whose processes are gone only loses its directory.
func (b *Backend) Destroy(ctx context.Context, inst sandbox.Instance) error {
	dir, err := b.dir(inst.ID)
	if err != nil {
		return fmt.Errorf("destroy sandbox: %w", err)
	}
	st, ok, err := decodeState(inst)
	if err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	if ok {
		if err := destroyProcesses(ctx, st); err != nil {
			return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
		}
	}
	if err := hostproc.RemoveAll(dir); err != nil {
		return fmt.Errorf("destroy sandbox %s: remove directory: %w", inst.ID, err)
	}
	b.log.Info("sandbox destroyed", "sandbox_id", inst.ID)
	return nil
}

func destroyProcesses(ctx context.Context, st instanceState) error {
	_, alive, err := leader(st)
	if err != nil {
		return err
	}
	// A dead leader's session id may already belong to someone else's new session: then
	// kill nothing, only reap the leader if it is a zombie child of this process.
	if alive {
		if err := killSession(ctx, st.PID); err != nil {
			return err
		}
	}
	return waitLeaderGone(ctx, st)
}

// waitLeaderGone waits until the runtime process is gone. A zombie counts as gone, except
// one whose parent is this process: that one is reaped here, since the Backend that started it
// may have been closed. (A killed multi-threaded leader shows as a zombie before its last
// thread exits, and only then can it be reaped; hence the loop.)
func waitLeaderGone(ctx context.Context, st instanceState) error {
	deadline := time.Now().Add(killTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		p, err := hostproc.ReadStat(st.PID)
		if err != nil || p.StartTime != st.StartTime {
			return nil // gone (or the pid already went to another process)
		}
		if p.Dead() {
			if p.PPID != os.Getpid() || reaped(st.PID) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runtime process %d still there %v after SIGKILL (state %c)", st.PID, killTimeout, p.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// reaped tries to reap child pid without blocking. It reports true when pid is reaped, here
// or by someone else (the Backend's reaper) meanwhile.
func reaped(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return got == pid || errors.Is(err, unix.ECHILD)
}
