package terminal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The variables a conversation's commands get on top of the shell's environment (its
// secrets) reach bash through the terminal, as lines bash reads and runs before the next
// command: never through a file, the command line or the environment bash started with, so
// that a changed value holds from the next command without a new shell. The terminal does not
// echo what is written to it, and bash's history is off while those lines are read, so no
// later command shows them.

// envValueChunk bounds the bytes of a value quoted on one line: quoted, every byte takes at
// most four, which keeps a line under maxLineBytes.
const envValueChunk = 900

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// SetEnv sets the variables that the commands started from now on get, on top of the
// shell's environment: a variable set before and left out of env is unset. Names that are not
// environment variable names are ignored.
func (s *Session) SetEnv(env map[string]string) {
	want := make(map[string]string, len(env))
	for k, v := range env {
		if envName.MatchString(k) {
			want[k] = strings.ReplaceAll(v, "\x00", "")
		}
	}
	s.mu.Lock()
	s.env = want
	s.mu.Unlock()
}

// syncEnv brings the shell's variables to what SetEnv asked for, before a command starts.
// The caller holds the session's lock and the shell is at its prompt.
func (s *Session) syncEnv(ctx context.Context, sh *shell) error {
	s.mu.Lock()
	want := s.env
	s.mu.Unlock()
	had := sh.env
	if maps.Equal(want, had) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	for _, line := range envLines(had, want) {
		if err := sh.runHidden(ctx, line); err != nil {
			// Whatever ran of it, every variable of either set is unknown now: the next
			// command sets or unsets each again.
			sh.env = map[string]string{}
			for name := range maps.Keys(had) {
				sh.env[name] = unknownValue
			}
			for name := range maps.Keys(want) {
				sh.env[name] = unknownValue
			}
			return err
		}
	}
	sh.env = want
	return nil
}

// unknownValue stands for a variable whose value in the shell is not known: no value equals
// it, since SetEnv drops NUL characters.
const unknownValue = "\x00"

// envLines are the lines that take bash from the variables had to those of want: history off
// (remembering whether it was on) and the exit status kept, then the changes, then history
// and the exit status back as they were.
func envLines(had, want map[string]string) []string {
	var stmts []string
	for _, name := range slices.Sorted(maps.Keys(had)) {
		if _, ok := want[name]; !ok {
			stmts = append(stmts, "unset -v "+name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		v := want[name]
		if old, ok := had[name]; ok && old == v {
			continue
		}
		op := "="
		for len(v) > envValueChunk {
			stmts = append(stmts, name+op+ansiQuote(v[:envValueChunk]))
			v, op = v[envValueChunk:], "+="
		}
		stmts = append(stmts, "export "+name+op+ansiQuote(v))
	}
	// The first line itself was recorded if history was on: it is taken out again (bash 5
	// and later), once it is sure to be the last entry.
	lines := []string{` __agentd_s=$?; __agentd_ret() { return "$1"; }; ` +
		`if [[ -o history ]]; then __agentd_h=1; set +o history; [[ $(history 1) == *__agentd_s=* ]] && history -d -1 2>/dev/null; ` +
		`else __agentd_h=; fi`}
	line := ""
	for _, st := range stmts {
		if line != "" && len(line)+len(st)+2 > maxLineBytes {
			lines = append(lines, line)
			line = ""
		}
		if line == "" {
			line = " " + st
		} else {
			line += "; " + st
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return append(lines, ` if [[ -n $__agentd_h ]]; then set -o history; fi; unset __agentd_h; __agentd_ret "$__agentd_s"`)
}

// ansiQuote quotes v as a bash $'...' string that holds only printable ASCII.
func ansiQuote(v string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// runHidden runs one line the model never sees: its output is dropped.
func (sh *shell) runHidden(ctx context.Context, line string) error {
	sh.begin()
	if err := sh.write([]byte(line + "\n")); err != nil {
		return err
	}
	for {
		busy, fin, changed, _ := sh.snapshot()
		if !busy && fin != nil {
			sh.takeFinal()
			return nil
		}
		select {
		case <-changed:
		case <-sh.exited:
			return errors.New("the shell exited")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
