package terminal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// output runs a command to its end and returns its output, failing unless it exits with 0.
func (f fixture) output(t *testing.T, command string) string {
	t.Helper()
	res, obs := f.run(t, cmd(command))
	out, res, obs := f.settle(t, res, obs)
	if res.IsError || obs.ExitCode != 0 {
		t.Fatalf("%q: exit %d:\n%s", command, obs.ExitCode, res.Text)
	}
	return out
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestEnv: the variables SetEnv gives reach every command started afterwards, their
// children too, byte for byte whatever they hold; a changed value holds from the next
// command, a variable left out is unset, and neither bash's history, the exit status a
// command reads, nor any file shows that they were set.
func TestEnv(t *testing.T) {
	f := newSession(t, time.Minute)
	tricky := "it's a \\ \"quoted\" $HOME `id` !! value\twith\ttabs\nand lines é ✓"
	var long strings.Builder
	for i := long.Len(); long.Len() < 3*maxLineBytes; i++ {
		fmt.Fprintf(&long, "%d'\\\x01é", i)
	}
	many := map[string]string{}
	for i := range 60 {
		many[fmt.Sprintf("MANY_%02d", i)] = strings.Repeat(fmt.Sprint(i%10), 100)
	}
	env := map[string]string{"MY_SECRET": "s3cr3t-value-123", "TRICKY": tricky, "LONG": long.String(), "not-a-name": "x"}
	for k, v := range many {
		env[k] = v
	}

	f.output(t, "false; true") // something before, so the variables go into a used shell
	f.run(t, cmd("false"))
	f.s.SetEnv(env)
	res, obs := f.run(t, cmd("echo $?"))
	if out, _, _ := f.settle(t, res, obs); out != "1" {
		t.Fatalf("the exit status after setting variables reads %q, want the last command's 1", out)
	}
	if got := f.output(t, `echo "$MY_SECRET"`); got != "s3cr3t-value-123" {
		t.Fatalf("MY_SECRET reads %q", got)
	}
	for name, v := range map[string]string{"TRICKY": tricky, "LONG": long.String(), "MANY_59": many["MANY_59"]} {
		// A child process gets them: they are exported.
		got := f.output(t, fmt.Sprintf(`sh -c 'printf "%%s" "$%s"' | sha256sum | cut -c1-64`, name))
		if got != sha(v) {
			t.Errorf("%s reaches a child process changed (sha %s, want %s)", name, got, sha(v))
		}
	}
	if got := f.output(t, `env | grep -c '^not-a-name=' || true`); got != "0" {
		t.Fatalf("a variable that is not a name was set: %q", got)
	}

	// Nothing shows how they were set: not the history, not a file.
	if hist := f.output(t, "history"); strings.Contains(hist, "MY_SECRET=") || strings.Contains(hist, "__agentd_s") {
		t.Fatalf("the history shows the variables being set:\n%s", hist)
	}
	for _, dir := range []string{f.dir, f.out} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, _ := os.ReadFile(path); strings.Contains(string(b), "s3cr3t-value-123") {
					t.Errorf("%s holds a value", path)
				}
			}
			return nil
		})
	}

	// A changed value holds from the next command; a variable left out is unset; one the
	// command set itself is its own.
	f.output(t, "export OWN=mine")
	f.s.SetEnv(map[string]string{"MY_SECRET": "rotated-value-456"})
	if got := f.output(t, `echo "$MY_SECRET ${TRICKY-unset} ${MANY_01-unset} $OWN"`); got != "rotated-value-456 unset unset mine" {
		t.Fatalf("after a change: %q", got)
	}
	// A reset starts a shell that gets them too.
	res, obs = f.run(t, tool.TerminalArgs{Command: `echo "$MY_SECRET"`, Reset: true})
	if out, _, _ := f.settle(t, res, obs); !strings.HasSuffix(out, "rotated-value-456") {
		t.Fatalf("after a reset: %q", out)
	}
	f.s.SetEnv(nil)
	if got := f.output(t, `echo "${MY_SECRET-unset}"`); got != "unset" {
		t.Fatalf("after SetEnv(nil): %q", got)
	}
	if hist := f.output(t, "history"); strings.Contains(hist, "rotated") || strings.Contains(hist, "unset -v") {
		t.Fatalf("the history shows the variables being changed:\n%s", hist)
	}
}
