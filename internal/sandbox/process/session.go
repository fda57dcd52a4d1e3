package process

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// Bounds of the loops over a session. A session whose processes fork faster than they can be
// signalled fails after these rather than looping forever.
const (
	maxStopPasses = 50
	settleTimeout = 5 * time.Second
	killTimeout   = 10 * time.Second
)

// stopSession sends SIGSTOP to every process of session sid, scanning again until a pass finds
// no process it has not stopped yet (a process may fork between the scan and its signal), and
// then waits until the kernel reports them all stopped.
func stopSession(ctx context.Context, sid int) error {
	signalled := map[int]uint64{} // pid → start time
	for pass := 0; ; pass++ {
		members, err := sessionMembers(sid)
		if err != nil {
			return err
		}
		fresh := 0
		for _, p := range members {
			if start, ok := signalled[p.PID]; ok && start == p.StartTime {
				continue
			}
			if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stop process %d: %w", p.PID, err)
			}
			signalled[p.PID] = p.StartTime
			fresh++
		}
		if fresh == 0 {
			break
		}
		if pass == maxStopPasses {
			return fmt.Errorf("stop session %d: processes kept appearing after %d passes", sid, maxStopPasses)
		}
	}
	return waitSession(ctx, sid, settleTimeout, func(p hostproc.Stat) bool { return p.Stopped() })
}

// contSession sends SIGCONT to every process of session sid. Stopped processes cannot fork,
// so one pass reaches them all.
func contSession(sid int) error {
	members, err := sessionMembers(sid)
	if err != nil {
		return err
	}
	for _, p := range members {
		if err := syscall.Kill(p.PID, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("continue process %d: %w", p.PID, err)
		}
	}
	return nil
}

// killSession sends SIGKILL to every process of session sid until none is left alive.
func killSession(ctx context.Context, sid int) error {
	return waitSession(ctx, sid, killTimeout, func(p hostproc.Stat) bool {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		return false
	})
}

// waitSession polls session sid until done holds for every live member, or timeout passes.
func waitSession(ctx context.Context, sid int, timeout time.Duration, done func(hostproc.Stat) bool) error {
	deadline := time.Now().Add(timeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		members, err := sessionMembers(sid)
		if err != nil {
			return err
		}
		pending := 0
		for _, p := range members {
			if !done(p) {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %d: %d processes still pending after %v", sid, pending, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}
