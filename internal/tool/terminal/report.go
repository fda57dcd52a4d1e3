package terminal

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// report is what one call that reached the shell tells the model.
type report struct {
	command string
	out     string // the command's output, cleaned, not yet clipped
	dropped int64  // bytes of the output the buffer did not keep
	// exitCode is the command's status, or -1 while it runs.
	exitCode int
	// timedOut: the call returned while the command runs on.
	timedOut       bool
	prefix, suffix string
	isError        bool
	notes          []string
}

// observe reports with the facts of the shell's latest prompt.
func (s *Session) observe(sh *shell, r report) tool.Result {
	return s.observeWith(sh.lastPrompt(), r)
}

// observeWith builds the observation and the model's text: notes, prefix, clipped output,
// suffix, then the working directory, the Python interpreter and the exit code when known.
//
// r.out may hold colour sequences (colourOutput): the observation's content keeps them for
// people, unless the output had to be clipped; the model's text never has them.
func (s *Session) observeWith(pr prompt, r report) tool.Result {
	plain := stripColour(r.out)
	out := clip(plain, s.opts.MaxOutputChars, s.opts.OutputDir, r.dropped)
	shown := out
	if out == plain {
		shown = r.out
	}
	prefix, suffix := r.prefix, r.suffix
	if r.dropped > 0 {
		suffix = fmt.Sprintf("\n[%d bytes in the middle of the output were not kept: between two calls the terminal keeps the first and the last %s of what a command prints.]", r.dropped, byteSize(s.opts.MaxBufferedOutput/2)) + suffix
	}
	if len(r.notes) > 0 {
		prefix = "[" + strings.Join(r.notes, "]\n[") + "]\n" + prefix
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(out)
	b.WriteString(suffix)
	body := strings.Trim(b.String(), "\n")
	var lines []string
	if body != "" {
		lines = append(lines, body)
	}
	if pr.cwd != "" {
		lines = append(lines, "[Current working directory: "+pr.cwd+"]")
	}
	if pr.python != "" {
		lines = append(lines, "[Python interpreter: "+pr.python+"]")
	}
	if r.exitCode != -1 {
		lines = append(lines, "[Command finished with exit code "+strconv.Itoa(r.exitCode)+"]")
	}
	obs := tool.TerminalObservation{
		Kind:     tool.KindTerminal,
		Command:  r.command,
		ExitCode: r.exitCode,
		Timeout:  r.timedOut,
		Metadata: tool.TerminalMetadata{
			ExitCode:          r.exitCode,
			PID:               pr.pid,
			Username:          pr.user,
			Hostname:          pr.host,
			WorkingDir:        pr.cwd,
			PyInterpreterPath: pr.python,
			Prefix:            prefix,
			Suffix:            suffix,
		},
		FullOutputSaveDir: s.opts.OutputDir,
		Content:           tool.Content(shown),
		IsError:           r.isError,
	}
	return tool.NewResult(strings.Join(lines, "\n"), r.isError, obs)
}

// errorResult is a call that did not reach the shell.
func (s *Session) errorResult(command, text string) tool.Result {
	return s.message(command, text, true)
}

func (s *Session) plainResult(command, text string) tool.Result {
	return s.message(command, text, false)
}

func (s *Session) message(command, text string, isError bool) tool.Result {
	var pr prompt
	s.mu.Lock()
	if s.sh != nil {
		pr = s.sh.lastPrompt()
	}
	s.mu.Unlock()
	obs := tool.TerminalObservation{
		Kind:     tool.KindTerminal,
		Command:  command,
		ExitCode: -1,
		Metadata: tool.TerminalMetadata{
			ExitCode: -1, PID: pr.pid, Username: pr.user, Hostname: pr.host,
			WorkingDir: pr.cwd, PyInterpreterPath: pr.python,
		},
		FullOutputSaveDir: s.opts.OutputDir,
		Content:           tool.Content(text),
		IsError:           isError,
	}
	return tool.NewResult(text, isError, obs)
}

// seconds formats d for the model: "30 seconds", "1.5 seconds".
func seconds(d time.Duration) string {
	v := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if v == "1" {
		return "1 second"
	}
	return v + " seconds"
}

// byteSize formats n for the model: "4 MiB", "32 KiB", "100 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
