// Package terminal is the terminal tool: a persistent bash session on a pseudo-terminal, one
// per conversation, in which the model runs one command per call.
//
// The session keeps the working directory, variables and running processes between calls. A
// call returns when the command's prompt comes back, or earlier, with exit code -1, when the
// command printed nothing new for a while (the no-change timeout), ran past the call's own
// timeout, or ran for the longest one call waits (the ceiling, which ends a call even while
// its command keeps printing); the command keeps running and later calls wait for more, type
// into it, or interrupt it. What a running command prints is held in a bounded buffer, its
// start and its end, between two calls.
package terminal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// Defaults.
const (
	// DefaultNoChangeTimeout is OpenHands' no-change timeout.
	DefaultNoChangeTimeout = 30 * time.Second
	// DefaultMaxWait lets a build or an install that keeps printing finish within one call
	// most of the time, while a command that prints without end (yes, a server's log in the
	// foreground) gives the model its turn back after two minutes.
	DefaultMaxWait           = 2 * time.Minute
	DefaultMaxOutputChars    = 30_000
	DefaultStartTimeout      = 10 * time.Second
	DefaultMaxBufferedOutput = 8 << 20
)

// maxLineBytes is the longest command line written to the terminal as it is. The terminal
// driver keeps at most 4095 characters of one line; a command with a longer line is run from a
// script file instead.
const maxLineBytes = 4000

// Options configure a Session.
type Options struct {
	// Dir is the directory the shell starts in, and starts in again after a reset. Required.
	Dir string
	// Env is the shell's environment. A few variables are set on top of it: TERM, and PAGER and
	// GIT_PAGER as cat, so that no pager waits for a key.
	Env []string
	// Bash is the path of bash; empty means the bash found on PATH.
	Bash string
	// OutputDir receives the full text of clipped outputs, and scripts for very long command
	// lines. It should be readable from the shell. Required.
	OutputDir string
	// NoChangeTimeout is how long a command may print nothing before the call returns;
	// 0 means DefaultNoChangeTimeout. A call's Waits may override it.
	NoChangeTimeout time.Duration
	// MaxWait is the longest a call waits for its command, however much it prints and
	// whatever timeout the model asked for; 0 means DefaultMaxWait. A call's Waits may
	// override it.
	MaxWait time.Duration
	// MaxOutputChars bounds the output in one observation; 0 means DefaultMaxOutputChars.
	MaxOutputChars int
	// MaxBufferedOutput bounds the bytes a running command's output takes between two calls:
	// the first and the last half are kept, what lies between is counted and dropped. It
	// also bounds the file a clipped output is saved to. 0 means DefaultMaxBufferedOutput.
	MaxBufferedOutput int
	// StartTimeout bounds the wait for a new shell's first prompt; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// Credential is the user the shell runs as; nil means this process's.
	Credential *syscall.Credential
}

// Session is one persistent shell. Calls to Run are serialised; Close may be called at any
// time, from any goroutine, and more than once: it ends a Run that is waiting.
type Session struct {
	opts Options
	lock chan struct{} // held by the Run in progress

	mu      sync.Mutex // guards the fields below, so Close need not wait for Run
	sh      *shell
	closed  bool
	command string            // the command line last started
	script  string            // the script file of that command, removed when it ends
	env     map[string]string // what the commands get on top of the environment; see SetEnv
	// ended is the end of that command once a call reported it, until the next command
	// starts: an empty command then repeats it (see Session.noCommand).
	ended *finished
}

// ErrClosed is what Run reports after Close.
var ErrClosed = errors.New("terminal session closed")

// New checks opts and returns a session whose shell starts on the first Run.
func New(opts Options) (*Session, error) {
	if !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("new terminal: directory %q is not absolute", opts.Dir)
	}
	if !filepath.IsAbs(opts.OutputDir) {
		return nil, fmt.Errorf("new terminal: output directory %q is not absolute", opts.OutputDir)
	}
	if opts.Bash == "" {
		p, err := exec.LookPath("bash")
		if err != nil {
			return nil, fmt.Errorf("new terminal: %w", err)
		}
		opts.Bash = p
	}
	if opts.NoChangeTimeout <= 0 {
		opts.NoChangeTimeout = DefaultNoChangeTimeout
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxOutputChars <= 0 {
		opts.MaxOutputChars = DefaultMaxOutputChars
	}
	if opts.MaxBufferedOutput <= 0 {
		opts.MaxBufferedOutput = DefaultMaxBufferedOutput
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	env := append([]string(nil), opts.Env...)
	opts.Env = append(env, "TERM=xterm-256color", "PAGER=cat", "GIT_PAGER=cat")
	return &Session{opts: opts, lock: make(chan struct{}, 1)}, nil
}

// Cwd returns the shell's working directory at its last prompt, or "" before the first.
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sh == nil {
		return ""
	}
	return s.sh.lastPrompt().cwd
}

// Close kills the shell and every process of its group, and stops the session for good.
func (s *Session) Close() error {
	s.mu.Lock()
	sh := s.sh
	s.sh = nil
	s.closed = true
	s.removeScriptLocked()
	s.mu.Unlock()
	if sh != nil {
		sh.kill()
	}
	return nil
}

// Run runs one terminal call, waiting for its command as w says (zero fields: the session's
// options). ctx bounds the wait: when it ends, Run returns at once, the command keeps running,
// and what it printed is left to the next call. Failures are reported in the Result, for the model; Run has
// no other error.
func (s *Session) Run(ctx context.Context, a tool.TerminalArgs, w Waits) tool.Result {
	w = w.or(s.opts)
	select {
	case s.lock <- struct{}{}:
		defer func() { <-s.lock }()
	case <-ctx.Done():
		return s.errorResult(a.Command, "The call was cancelled while it waited for the previous call on this terminal to end.")
	}

	var notes []string
	if a.Reset {
		if err := s.restart(ctx); errors.Is(err, ErrClosed) {
			return s.errorResult(a.Command, "This terminal session was closed.")
		} else if err != nil {
			return s.errorResult(a.Command, "The terminal could not be reset: "+err.Error())
		}
		text := fmt.Sprintf("The terminal session was reset: a new shell started in %s. Variables, the working directory and processes of the old session are gone.", s.opts.Dir)
		if strings.TrimSpace(a.Command) == "" {
			return s.plainResult(a.Command, text)
		}
		notes = append(notes, text)
	}
	sh, note, err := s.shell(ctx)
	if errors.Is(err, ErrClosed) {
		return s.errorResult(a.Command, "This terminal session was closed.")
	}
	if err != nil {
		return s.errorResult(a.Command, err.Error())
	}
	if note != "" {
		notes = append(notes, note)
	}

	busy, unreported := sh.state()
	empty := strings.TrimSpace(a.Command) == ""
	switch {
	case busy && a.IsInput:
		return s.sendInput(ctx, sh, a, w, notes)
	case (busy || unreported) && empty:
		return s.wait(ctx, sh, a, w, notes, true)
	case unreported && a.IsInput:
		notes = append(notes, "The command had already finished, so the input was not sent.")
		return s.wait(ctx, sh, a, w, notes, true)
	case busy:
		prev := s.currentCommand()
		prefix := fmt.Sprintf("The previous command %q is still running, so %q was not run. Wait for it with an empty command, or interrupt it by sending C-c with is_input=true, then send the new command.", prev, a.Command)
		raw, dropped := sh.takeOutput()
		out := cleanOutput(raw)
		if out != "" {
			prefix += "\n\n[New output of the running command:]\n"
		}
		return s.observe(sh, report{command: a.Command, out: out, dropped: dropped, exitCode: -1,
			prefix: prefix, isError: true, notes: notes})
	case a.IsInput:
		return s.errorResult(a.Command, "No command is running, so there is nothing to send input to. Run a command without is_input.")
	case empty:
		return s.noCommand(a.Command)
	}

	cmds := splitCommands(a.Command)
	if len(cmds) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "Only one command can run per call, but this input holds %d:", len(cmds))
		for i, c := range cmds {
			fmt.Fprintf(&b, "\n(%d) %s", i+1, c)
		}
		b.WriteString("\nJoin them into one command with && or ;, or send them in separate calls.")
		return s.errorResult(a.Command, b.String())
	}
	if looksLikeData(a.Command) {
		return s.errorResult(a.Command, "This is JSON data, not a shell command. To write it to a file, use the file_editor tool or a heredoc: cat > file.json <<'EOF' ... EOF.")
	}
	if fin := sh.takeFinal(); fin != nil {
		// The previous command ended after the call that last reported on it.
		note := fmt.Sprintf("The previous command finished after the last call, with exit code %d.", fin.prompt.exitCode)
		if out := cleanOutput(fin.out); out != "" {
			note += " Its last output was:\n" + clip(out, s.opts.MaxOutputChars/2, s.opts.OutputDir, fin.dropped)
		}
		notes = append(notes, note)
	}
	if err := s.syncEnv(ctx, sh); err != nil {
		return s.errorResult(a.Command, "The command was not run: the terminal could not set its environment variables ("+err.Error()+"). Try again.")
	}
	// Bash prompts after every line at the top level, blank and comment lines too, so only
	// the command itself is sent.
	line := a.Command
	if len(cmds) == 1 {
		line = cmds[0]
	}
	return s.start(ctx, sh, a, w, line, notes)
}

// shell returns the running shell, starting one if there is none or the last one exited.
func (s *Session) shell(ctx context.Context) (*shell, string, error) {
	s.mu.Lock()
	sh, closed := s.sh, s.closed
	s.mu.Unlock()
	if closed {
		return nil, "", ErrClosed
	}
	note := ""
	if sh != nil && sh.hasExited() {
		note = fmt.Sprintf("The previous shell had exited (status %d); this is a new session in %s.", sh.status, s.opts.Dir)
		sh = nil
	}
	if sh != nil {
		return sh, "", nil
	}
	if err := s.restart(ctx); err != nil {
		return nil, "", fmt.Errorf("the terminal could not start: %w", err)
	}
	s.mu.Lock()
	sh = s.sh
	s.mu.Unlock()
	if sh == nil {
		return nil, "", ErrClosed
	}
	return sh, note, nil
}

// restart kills the current shell, if any, and starts a new one.
func (s *Session) restart(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	old := s.sh
	s.sh = nil
	s.ended = nil
	s.removeScriptLocked()
	s.mu.Unlock()
	if old != nil {
		old.kill()
	}
	sh, err := startShell(ctx, s.opts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		go sh.kill()
		return ErrClosed
	}
	s.sh = sh
	return nil
}

// start sends a new command line and waits for it.
func (s *Session) start(ctx context.Context, sh *shell, a tool.TerminalArgs, w Waits, line string, notes []string) tool.Result {
	line = strings.TrimRight(strings.ReplaceAll(line, "\r\n", "\n"), "\n")
	script := ""
	if longestLine(line) > maxLineBytes {
		sum := sha256.Sum256([]byte(line))
		script = filepath.Join(s.opts.OutputDir, "command-"+hex.EncodeToString(sum[:4])+".sh")
		if err := os.MkdirAll(s.opts.OutputDir, 0o755); err != nil {
			return s.errorResult(a.Command, "The command has a line too long for the terminal, and it could not be saved to a script: "+err.Error())
		}
		if err := os.WriteFile(script, []byte(line+"\n"), 0o644); err != nil {
			return s.errorResult(a.Command, "The command has a line too long for the terminal, and it could not be saved to a script: "+err.Error())
		}
		line = ". " + shellQuote(script)
	}
	s.mu.Lock()
	s.command = a.Command
	s.ended = nil
	s.removeScriptLocked()
	s.script = script
	s.mu.Unlock()
	sh.begin()
	if err := sh.write([]byte(line + "\n")); err != nil {
		return s.errorResult(a.Command, "The command could not be sent to the terminal: "+err.Error())
	}
	return s.wait(ctx, sh, a, w, notes, false)
}

// sendInput types text, or a key, into the running command and waits for what follows.
func (s *Session) sendInput(ctx context.Context, sh *shell, a tool.TerminalArgs, w Waits, notes []string) tool.Result {
	input, isKey := keyBytes(a.Command)
	if !isKey {
		input = a.Command
		if !strings.HasSuffix(input, "\n") {
			input += "\n"
		}
	}
	if isKey && len(input) == 1 {
		switch sig := sh.signalKey(input[0]); sig {
		case syscall.SIGTSTP:
			return s.errorResult(a.Command, "C-z cannot suspend the command: this terminal has no job control. Interrupt it with C-c, and start long-running programs in the background with & and their output redirected to a file.")
		case 0:
		default:
			sh.touch()
			if err := sh.interrupt(ctx, sig); err != nil {
				return s.errorResult(a.Command, "The key could not be delivered: "+err.Error())
			}
			return s.wait(ctx, sh, a, w, notes, true)
		}
	}
	sh.touch()
	if err := sh.write([]byte(input)); err != nil {
		return s.errorResult(a.Command, "The input could not be sent: the program is not reading it ("+err.Error()+"). Interrupt it with C-c if it is stuck.")
	}
	return s.wait(ctx, sh, a, w, notes, true)
}

// endedTail is how much of a finished command's output the session keeps for noCommand: the
// last bytes, more than the model is shown at once.
const endedTail = 64 << 10

// commandEnded forgets the finished command's script, and keeps its end, which a call is
// about to report, for noCommand: its exit code and the tail of its output, a copy, so that
// the buffer of a large output is not held until the next command.
func (s *Session) commandEnded(fin *finished) {
	if fin != nil {
		kept := *fin
		kept.out = bytes.Clone(fin.out[max(0, len(fin.out)-endedTail):])
		fin = &kept
	}
	s.mu.Lock()
	s.removeScriptLocked()
	s.ended = fin
	s.mu.Unlock()
}

// noCommand answers an empty command while nothing runs. The last command's end was reported
// already, but perhaps to a call nobody read any more (one whose client went away as the
// command ended, such as the agent's call when the user paused it), so it is repeated: what
// the command printed is never lost to the model.
func (s *Session) noCommand(command string) tool.Result {
	text := "No command is running, so there is no output to wait for. Send a command to run."
	s.mu.Lock()
	last, fin := s.command, s.ended
	s.mu.Unlock()
	if fin != nil {
		text += fmt.Sprintf("\n\nThe last command, %q, finished with exit code %d.", last, fin.prompt.exitCode)
		if out := stripEcho(cleanOutput(fin.out), last); out != "" {
			text += " Its output ended with:\n" + lastRunes(out, s.opts.MaxOutputChars/2)
		}
	}
	return s.errorResult(command, text)
}

func (s *Session) removeScriptLocked() {
	if s.script != "" {
		os.Remove(s.script)
		s.script = ""
	}
}

func (s *Session) currentCommand() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.command
}

func longestLine(s string) int {
	n := 0
	for line := range strings.Lines(s) {
		n = max(n, len(line))
	}
	return n
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
