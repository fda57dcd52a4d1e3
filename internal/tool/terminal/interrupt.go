package terminal

import (
	"context"
	"syscall"
	"time"
)

// Bash runs its commands in its own process group, without job control, and an interrupt key
// becomes a signal to that whole group (see signalKey). Such a signal can be lost: a child
// that bash has forked but that has not yet run its program still has bash's handlers, which
// note the signal and carry on, and bash, which got the signal too, takes a child that then
// exits normally for one that chose to handle it. So `sleep 100` typed just before C-c, or
// any loop of short commands, could survive the key. A terminal user presses C-c again; the
// terminal tool does the same, for a bounded time, while a child of bash that never got the
// signal is still there.
//
// A signal sent again must not reach bash at its prompt: bash would act on it while it reads
// the next command line, and cut that line short. So bash is stopped while the group is
// looked at and signalled: a child it has not reaped means it is still in the command, and a
// stopped bash cannot reap it and go on to its prompt before the signal is there.
const (
	// interruptGrace is how long an interrupted command gets to end before the group is
	// looked at: a process that takes the default action dies within it on an idle machine.
	interruptGrace = 50 * time.Millisecond
	// interruptChecks bounds the looks, and so the resends, to about ten seconds in all on an
	// idle machine: a loaded one can take several looks to catch a loop of short commands
	// between a fork and its exec, and there are looks only while the command runs on.
	interruptChecks = 200
	// stopWait bounds the wait for bash to stop before a look.
	stopWait = 200 * time.Millisecond
)

// interrupt sends sig to bash's process group, then sends it again while the command runs on
// and a child of bash missed it (see missedChild). It returns once the prompt is back, bash
// has exited, ctx has ended, or the looks ran out; the caller then waits for the command as
// after any input.
func (sh *shell) interrupt(ctx context.Context, sig syscall.Signal) error {
	if err := sh.signal(sig); err != nil {
		return err
	}
	for range interruptChecks {
		if !sh.busyAfter(ctx, interruptGrace) {
			return nil
		}
		if !sh.resend(sig) {
			return nil
		}
	}
	return nil
}

// resend stops bash, sends sig to its group again if a child of bash missed it, and lets
// bash go on. It reports false when the group cannot be looked at (a /proc that hides it):
// the first signal then stands, as a terminal's would.
func (sh *shell) resend(sig syscall.Signal) bool {
	if err := syscall.Kill(sh.pid, syscall.SIGSTOP); err != nil {
		return false // bash is gone: the wait that follows reports it
	}
	defer syscall.Kill(sh.pid, syscall.SIGCONT)
	if !waitStopped(sh.pid, stopWait) {
		return true // look again next time
	}
	missed, err := missedChild(sh.pid, sig)
	if err != nil {
		return false
	}
	if missed {
		_ = sh.signal(sig)
	}
	return true
}

// busyAfter waits up to d for the running command's prompt and reports whether the command
// still runs: false once the prompt is back, bash has exited or ctx has ended.
func (sh *shell) busyAfter(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		busy, _, changed, _ := sh.snapshot()
		if !busy {
			return false
		}
		select {
		case <-changed:
		case <-t.C:
			return true
		case <-sh.exited:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
