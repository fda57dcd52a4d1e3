package terminal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// interrupt stops the session's command as a pause does, bounded so that a hang fails the test.
func (f fixture) interrupt(t *testing.T, grace time.Duration) (tool.Result, tool.TerminalObservation, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, ok := f.s.Interrupt(ctx, grace)
	var obs tool.TerminalObservation
	if ok {
		if err := json.Unmarshal(res.Observation, &obs); err != nil {
			t.Fatalf("observation: %v: %s", err, res.Observation)
		}
	}
	return res, obs, ok
}

// TestInterruptStopsTheCommand: a command whose call nobody waits for any more is stopped with
// C-c; its report has its output and exit code, and the next command runs in the same shell.
func TestInterruptStopsTheCommand(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: time.Hour, MaxWait: 200 * time.Millisecond})
	if _, _, ok := f.interrupt(t, time.Minute); ok {
		t.Fatal("an interrupt before any command reported one")
	}
	f.run(t, cmd("cd / && export KEPT=yes"))
	res, obs := f.run(t, cmd("echo started; sleep 1000"))
	if obs.ExitCode != -1 {
		t.Fatalf("the command ended: %s", res.Text)
	}
	res, obs, ok := f.interrupt(t, time.Minute)
	if !ok || obs.ExitCode != 130 || obs.Command != "echo started; sleep 1000" || res.IsError {
		t.Fatalf("interrupt: %v, exit %d, command %q:\n%s", ok, obs.ExitCode, obs.Command, res.Text)
	}
	if _, _, ok := f.interrupt(t, time.Minute); ok {
		t.Fatal("a second interrupt found a command")
	}
	res, obs = f.run(t, cmd("echo $KEPT; pwd"))
	if obs.ExitCode != 0 || obs.Content[0].Text != "yes\n/" {
		t.Fatalf("the next command: exit %d:\n%s", obs.ExitCode, res.Text)
	}
}

// TestInterruptReportsAnEndedCommand: a command that ended after its call gave up is reported
// by the interrupt, output and exit code, and not again by the next call.
func TestInterruptReportsAnEndedCommand(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: time.Hour, MaxWait: 200 * time.Millisecond})
	res, obs := f.run(t, cmd("until [ -e go ]; do sleep 0.01; done; echo released; false"))
	if obs.ExitCode != -1 {
		t.Fatalf("the command ended: %s", res.Text)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		f.s.mu.Lock()
		_, unreported := f.s.sh.state()
		f.s.mu.Unlock()
		if unreported {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, obs, ok := f.interrupt(t, time.Minute)
	if !ok || obs.ExitCode != 1 || !strings.Contains(obs.Content[0].Text, "released") {
		t.Fatalf("interrupt: %v, exit %d:\n%s", ok, obs.ExitCode, res.Text)
	}
	if _, _, ok := f.interrupt(t, time.Minute); ok {
		t.Fatal("the ended command was reported twice")
	}
}

// TestInterruptEndsACommandThatIgnoresIt: a command that runs on after C-c is ended with its
// shell once the grace is over; the report says so, and the next command runs in a new shell.
func TestInterruptEndsACommandThatIgnoresIt(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: time.Hour, MaxWait: 200 * time.Millisecond})
	f.run(t, cmd("export KEPT=yes"))
	res, obs := f.run(t, cmd(`trap "" INT; echo stubborn; while :; do sleep 0.05 || true; done`))
	if obs.ExitCode != -1 {
		t.Fatalf("the command ended: %s", res.Text)
	}
	res, obs, ok := f.interrupt(t, 300*time.Millisecond)
	if !ok || obs.ExitCode != -1 || !strings.Contains(res.Text, "did not end at C-c within 0.3 seconds, so its terminal session was ended") {
		t.Fatalf("interrupt: %v, exit %d:\n%s", ok, obs.ExitCode, res.Text)
	}
	res, obs = f.run(t, cmd("echo next${KEPT}"))
	if obs.ExitCode != 0 || obs.Content[0].Text != "next" {
		t.Fatalf("the next command: exit %d:\n%s", obs.ExitCode, res.Text)
	}
}
