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
	settleTimeout = 5 * time.Second
	killTimeout   = 10 * time.Second
)

// stopSession sends SIGSTOP to every process of session sid and scans again, signalling any
// process not yet stopped, until the kernel reports them all stopped. Scanning until then
// (not only until no new pid shows up) catches a child forked by a process in the very
// moment it was being stopped: the child does not inherit the pending stop.
//
// A process in uninterruptible sleep (D) that was signalled counts as stopped: it runs no
// user code, and the stop takes effect the moment it leaves the kernel. This matters for a
// vfork parent (dash, and Go's os/exec, spawn that way) whose child was stopped before it
// could exec: the parent waits in D for an exec that cannot happen until the resume.
//
// A child forked while the session is scanned can be missing from the scan that finds its
// parent stopped; waitSession says why two scans alike are needed.
func stopSession(ctx context.Context, sid int) error {
	signalled := map[int]uint64{} // pid → start time
	return waitSession(ctx, sid, settleTimeout, func(p hostproc.Stat) bool {
		if p.Stopped() {
			return true
		}
		if start, ok := signalled[p.PID]; ok && start == p.StartTime && p.State == 'D' {
			return true
		}
		_ = syscall.Kill(p.PID, syscall.SIGSTOP) // a process gone meanwhile leaves the scan
		signalled[p.PID] = p.StartTime
		return false
	})
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

// waitSession polls session sid until done holds for every live member in two scans in a
// row that find the same members, or timeout passes. One scan is not enough: it lists the
// session's pids before it reads their states, so a process forked meanwhile can be
// missing from a scan that finds every process it lists done.
func waitSession(ctx context.Context, sid int, timeout time.Duration, done func(hostproc.Stat) bool) error {
	return waitScans(ctx, fmt.Sprintf("session %d", sid), func() ([]hostproc.Stat, error) { return sessionMembers(sid) }, timeout, done)
}

// waitScans is waitSession over the scans of scan, of the processes of what.
func waitScans(ctx context.Context, what string, scan func() ([]hostproc.Stat, error), timeout time.Duration, done func(hostproc.Stat) bool) error {
	deadline := time.Now().Add(timeout)
	var settled map[int]uint64 // pid → start time, of the last scan if every member was done
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		members, err := scan()
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
			if sameMembers(settled, members) {
				return nil
			}
			settled = make(map[int]uint64, len(members))
			for _, p := range members {
				settled[p.PID] = p.StartTime
			}
		} else {
			settled = nil
		}
		if time.Now().After(deadline) {
			var states []string
			for _, p := range members {
				states = append(states, fmt.Sprintf("%d:%c", p.PID, p.State))
			}
			return fmt.Errorf("%s: %d processes still pending after %v (%v)", what, pending, timeout, states)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// sameMembers reports whether members are the processes of settled (nil: none yet).
func sameMembers(settled map[int]uint64, members []hostproc.Stat) bool {
	if settled == nil || len(settled) != len(members) {
		return false
	}
	for _, p := range members {
		if start, ok := settled[p.PID]; !ok || start != p.StartTime {
			return false
		}
	}
	return true
}
