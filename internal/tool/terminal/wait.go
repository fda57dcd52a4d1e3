package terminal

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// Waits bound how long one call waits for its command. A zero field means the session's
// option (Options.NoChangeTimeout, Options.MaxWait).
type Waits struct {
	// NoChange ends the call once the command has printed nothing new for this long.
	NoChange time.Duration
	// Max ends the call after this long, however much the command prints and whatever
	// timeout the model asked for.
	Max time.Duration
}

// or fills the zero fields of w from opts.
func (w Waits) or(opts Options) Waits {
	if w.NoChange <= 0 {
		w.NoChange = opts.NoChangeTimeout
	}
	if w.Max <= 0 {
		w.Max = opts.MaxWait
	}
	return w
}

// wait waits for the running command's prompt and reports. It gives up, the command running
// on, at the first of: no new output for the no-change timeout (unless the model set a
// timeout), the model's timeout, the ceiling w.Max, the end of ctx. The end of the shell ends
// it too.
func (s *Session) wait(ctx context.Context, sh *shell, a tool.TerminalArgs, w Waits, notes []string, continued bool) tool.Result {
	limit := w.Max
	var asked time.Duration
	if a.Timeout != nil && *a.Timeout > 0 {
		asked = time.Duration(*a.Timeout * float64(time.Second))
		limit = min(asked, w.Max)
	}
	ceiling := time.NewTimer(limit)
	defer ceiling.Stop()
	soft := time.NewTimer(w.NoChange)
	defer soft.Stop()
	var softC <-chan time.Time
	if asked == 0 {
		softC = soft.C
	}
	prefix := ""
	if continued {
		prefix = "[Continued output of the running command:]\n"
	}
	// running reports the command as still running, with the output since the last call.
	running := func(suffix string, isError bool) tool.Result {
		out, dropped := sh.takeOutput()
		return s.observe(sh, report{command: a.Command, out: colourOutput(out), dropped: dropped,
			exitCode: -1, timedOut: true, prefix: prefix, suffix: suffix, isError: isError, notes: notes})
	}
	for {
		if ctx.Err() != nil {
			// Before anything else: a call nobody waits for must take neither the command's
			// output nor its end, which the next call reports. (A change and the end of ctx
			// may come at once.)
			return s.errorResult(a.Command, "The call was cancelled; the command is still running.")
		}
		busy, fin, changed, lastOut := sh.snapshot()
		if !busy && fin != nil {
			fin = sh.takeFinal()
			s.commandEnded(fin)
			pr := fin.prompt
			out := stripEcho(colourOutput(fin.out), s.currentCommand())
			return s.observeWith(pr, report{command: a.Command, out: out, dropped: fin.dropped,
				exitCode: pr.exitCode, prefix: prefix, notes: notes})
		}
		if asked == 0 {
			idle := time.Since(lastOut)
			if idle >= w.NoChange {
				return running(fmt.Sprintf("\n[The command is still running: it printed nothing new for %s. Send an empty command to wait for more output, send input or a key such as C-c with is_input=true, or set timeout to wait longer in one call.]", seconds(w.NoChange)), false)
			}
			soft.Reset(w.NoChange - idle)
		}
		select {
		case <-changed:
		case <-softC:
		case <-ceiling.C:
			switch {
			case asked > 0 && asked <= w.Max:
				return running(fmt.Sprintf("\n[The command is still running after its timeout of %s. Send an empty command to wait for more output, or send input or a key such as C-c with is_input=true.]", seconds(asked)), false)
			case asked > 0:
				return running(fmt.Sprintf("\n[The command is still running after %s: one call waits at most that long, less than the timeout of %s you set. Send an empty command to keep waiting, or send input or a key such as C-c with is_input=true.]", seconds(w.Max), seconds(asked)), false)
			default:
				return running(fmt.Sprintf("\n[The command is still running after %s: one call waits at most that long, even while the command keeps printing. Send an empty command to wait for more output, or send input or a key such as C-c with is_input=true to interrupt it.]", seconds(w.Max)), false)
			}
		case <-sh.exited:
			if busy, fin, _, _ := sh.snapshot(); !busy && fin != nil {
				continue // the prompt came just before the end
			}
			s.commandEnded(nil)
			out, dropped := sh.takeOutput()
			return s.observe(sh, report{command: a.Command, out: colourOutput(out), dropped: dropped,
				exitCode: sh.status, prefix: prefix, notes: notes,
				suffix: fmt.Sprintf("\n[The shell exited with status %d. The next command starts a new session in %s.]", sh.status, s.opts.Dir)})
		case <-ctx.Done():
		}
	}
}
