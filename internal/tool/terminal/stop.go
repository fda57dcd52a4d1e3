package terminal

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// Interrupt stops the command of a call whose result nobody waits for any more (the agent was
// paused while it ran). It sends C-c and waits for the prompt; a command that runs on for grace
// (resends of C-c included) is ended with the whole shell, so that the next command finds the
// terminal free, in a new session. It returns the command's report, with its output since the
// last call, and false when no command ran or waited to be reported.
func (s *Session) Interrupt(ctx context.Context, grace time.Duration) (tool.Result, bool) {
	w := Waits{NoChange: grace, Max: grace}
	select {
	case s.lock <- struct{}{}:
		defer func() { <-s.lock }()
	case <-ctx.Done():
		return tool.Result{}, false
	}
	s.mu.Lock()
	sh := s.sh
	s.mu.Unlock()
	if sh == nil {
		return tool.Result{}, false
	}
	busy, unreported := sh.state()
	a := tool.TerminalArgs{Command: s.currentCommand()}
	if !busy {
		if !unreported {
			return tool.Result{}, false
		}
		return s.wait(ctx, sh, a, w, nil, true), true // it ended after the call gave up
	}
	sh.touch()
	var notes []string
	stop, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := sh.interrupt(stop, syscall.SIGINT); err != nil {
		notes = append(notes, "C-c could not be delivered: "+err.Error())
	}
	sh.busyAfter(stop, grace)
	if busy, _ := sh.state(); !busy || sh.hasExited() || ctx.Err() != nil {
		return s.wait(ctx, sh, a, w, notes, true), true
	}
	// It ignored C-c: the shell goes, and everything it started.
	s.mu.Lock()
	if s.sh == sh {
		s.sh = nil
	}
	s.ended = nil
	s.removeScriptLocked()
	s.mu.Unlock()
	sh.kill()
	out, dropped := sh.takeOutput()
	return s.observe(sh, report{command: a.Command, out: colourOutput(out), dropped: dropped, exitCode: -1,
		prefix: "[Continued output of the running command:]\n", notes: notes,
		suffix: fmt.Sprintf("\n[The command did not end at C-c within %s, so its terminal session was ended with everything it ran. The next command starts a new session in %s.]", seconds(grace), s.opts.Dir)}), true
}
