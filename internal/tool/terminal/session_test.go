package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// TestMain fails the run if any test left a child process behind: every shell must be killed
// and reaped by Close.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := waitNoChildren(30 * time.Second); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "child processes left: %v\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// waitNoChildren waits until the test binary has no child process, and returns those left.
func waitNoChildren(d time.Duration) []string {
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(d)
	for {
		var left []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			i := strings.LastIndexByte(string(b), ')')
			if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && f[1] == self {
				left = append(left, e.Name()+" (state "+f[0]+")")
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func needBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bash is not installed")
		}
		t.Skip("bash is not installed")
	}
}

type fixture struct {
	s   *Session
	dir string
	out string
}

func newSession(t *testing.T, noChange time.Duration) fixture {
	t.Helper()
	return newSessionWith(t, Options{NoChangeTimeout: noChange})
}

// newSessionWith starts a session with opts, in a directory of the test's.
func newSessionWith(t *testing.T, opts Options) fixture {
	t.Helper()
	needBash(t)
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "outputs")
	opts.Dir, opts.OutputDir = dir, out
	opts.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return fixture{s: s, dir: dir, out: out}
}

// run makes one call, bounded so that a hang fails the test instead of stalling it.
func (f fixture) run(t *testing.T, a tool.TerminalArgs) (tool.Result, tool.TerminalObservation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := f.s.Run(ctx, a, Waits{})
	var obs tool.TerminalObservation
	if err := json.Unmarshal(res.Observation, &obs); err != nil {
		t.Fatalf("observation: %v: %s", err, res.Observation)
	}
	if obs.Kind != tool.KindTerminal || obs.IsError != res.IsError {
		t.Fatalf("observation kind %q is_error %v, result is_error %v", obs.Kind, obs.IsError, res.IsError)
	}
	return res, obs
}

// settle carries on a call that returned while its command still ran (the no-change timeout,
// which a busy machine can reach before a quick command is done) with empty commands until the
// command ends. It returns all the output, one piece a line, and the last call's result.
func (f fixture) settle(t *testing.T, res tool.Result, obs tool.TerminalObservation) (string, tool.Result, tool.TerminalObservation) {
	t.Helper()
	var out []string
	if text := obs.Content[0].Text; text != "" {
		out = append(out, text)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !res.IsError && obs.ExitCode == -1 && obs.Timeout {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not end within 30s; output %q, last:\n%s", out, res.Text)
		}
		res, obs = f.run(t, cmd(""))
		if text := obs.Content[0].Text; text != "" {
			out = append(out, text)
		}
	}
	return strings.Join(out, "\n"), res, obs
}

// firstOutput carries on a call to a command that runs on, with empty commands, until it has
// printed something (a busy machine may end the first call before the command printed), and
// returns that.
func (f fixture) firstOutput(t *testing.T, res tool.Result, obs tool.TerminalObservation) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for obs.Content[0].Text == "" {
		if res.IsError || obs.ExitCode != -1 || time.Now().After(deadline) {
			t.Fatalf("no output from the running command:\n%s", res.Text)
		}
		res, obs = f.run(t, cmd(""))
	}
	return obs.Content[0].Text
}

// sleeper is a command that runs until it is interrupted, and writes the file started once
// it runs, for tests that act while it does.
func (f fixture) sleeper(name string) (command, started string) {
	started = filepath.Join(f.dir, name+".started")
	return "sh -c 'touch " + started + "; exec sleep 100'", started
}

func cmd(c string) tool.TerminalArgs { return tool.TerminalArgs{Command: c} }

func input(c string) tool.TerminalArgs { return tool.TerminalArgs{Command: c, IsInput: true} }

func TestPersistentState(t *testing.T) {
	f := newSession(t, time.Minute)
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args     tool.TerminalArgs
		out      string
		exitCode int
		cwd      string
	}{
		{cmd("echo hello"), "hello", 0, f.dir},
		{cmd("cd sub && export GREETING=hi && X=local"), "", 0, f.dir + "/sub"},
		{cmd("pwd; echo $GREETING $X"), f.dir + "/sub\nhi local", 0, f.dir + "/sub"},
		{cmd("false"), "", 1, f.dir + "/sub"},
		{cmd("echo $?"), "1", 0, f.dir + "/sub"},
		{cmd("sh -c 'exit 7'"), "", 7, f.dir + "/sub"},
		{cmd("printf 'no newline'"), "no newline", 0, f.dir + "/sub"},
		{cmd("echo 'quote!' \"bang!\""), "quote! bang!", 0, f.dir + "/sub"},
		{cmd("printf '\\033[31mred\\033[0m plain\\n'"), "\x1b[31mred\x1b[0m plain", 0, f.dir + "/sub"}, // colour kept for people
		{cmd("printf 'progress 10%%\\rprogress 100%%\\n'"), "progress 100%", 0, f.dir + "/sub"},
		{cmd("echo out; echo err >&2"), "out\nerr", 0, f.dir + "/sub"},
		{cmd("f() { echo in f; }"), "", 0, f.dir + "/sub"},
		{cmd("f"), "in f", 0, f.dir + "/sub"},
		{cmd("cat <<'EOF'\nline one\n  $HOME stays\nEOF"), "line one\n  $HOME stays", 0, f.dir + "/sub"},
		{cmd("for i in 1 2; do\n  echo n$i\ndone"), "n1\nn2", 0, f.dir + "/sub"},
		{cmd("echo a \\\n  b"), "a b", 0, f.dir + "/sub"},
		{cmd("\n# a comment first\necho commented\n\n"), "commented", 0, f.dir + "/sub"},
	}
	for _, st := range steps {
		res, obs := f.run(t, st.args)
		if res.IsError || obs.ExitCode != st.exitCode || obs.Timeout {
			t.Fatalf("%q: is_error %v exit %d timeout %v:\n%s", st.args.Command, res.IsError, obs.ExitCode, obs.Timeout, res.Text)
		}
		if got := obs.Content[0].Text; got != st.out {
			t.Fatalf("%q: output %q, want %q", st.args.Command, got, st.out)
		}
		if obs.Metadata.WorkingDir != st.cwd {
			t.Fatalf("%q: cwd %q, want %q", st.args.Command, obs.Metadata.WorkingDir, st.cwd)
		}
		wantTail := fmt.Sprintf("[Current working directory: %s]", st.cwd)
		if !strings.Contains(res.Text, wantTail) || !strings.HasSuffix(res.Text, fmt.Sprintf("[Command finished with exit code %d]", st.exitCode)) {
			t.Fatalf("%q: text lacks the status lines:\n%s", st.args.Command, res.Text)
		}
	}
}

func TestLongCommand(t *testing.T) {
	f := newSession(t, 300*time.Millisecond)
	gate := filepath.Join(f.dir, "go")

	// No new output for the no-change timeout: the call returns, the command runs on. It
	// waits for a file the test writes, so it is still running however slow the machine.
	res, obs := f.run(t, cmd("echo start; until [ -e "+gate+" ]; do sleep 0.01; done; echo end"))
	if res.IsError || obs.ExitCode != -1 || !obs.Timeout {
		t.Fatalf("first call: exit %d timeout %v:\n%s", obs.ExitCode, obs.Timeout, res.Text)
	}
	if !strings.Contains(res.Text, "still running") || strings.Contains(res.Text, "Command finished") {
		t.Fatalf("first call text:\n%s", res.Text)
	}
	if out := f.firstOutput(t, res, obs); out != "start" {
		t.Fatalf("output of the running command %q, want start", out)
	}

	// A new command is refused while it runs.
	res, obs = f.run(t, cmd("echo other"))
	if !res.IsError || obs.ExitCode != -1 || !strings.Contains(res.Text, "is_input") {
		t.Fatalf("second command was not refused:\n%s", res.Text)
	}

	// An empty command waits for the rest.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, obs = f.run(t, cmd(""))
	rest, res, obs := f.settle(t, res, obs)
	if res.IsError || obs.ExitCode != 0 || rest != "end" || !strings.HasPrefix(res.Text, "[Continued output") {
		t.Fatalf("rest: exit %d %q:\n%s", obs.ExitCode, rest, res.Text)
	}

	// C-c interrupts a long sleep: it ends with the exit code of an interrupt.
	sleep, started := f.sleeper("sleep")
	res, obs = f.run(t, cmd(sleep))
	if obs.ExitCode != -1 {
		t.Fatalf("sleep finished: %s", res.Text)
	}
	waitFile(t, started)
	res, obs = f.run(t, input("C-c"))
	if _, res, obs = f.settle(t, res, obs); res.IsError || obs.ExitCode != 130 {
		t.Fatalf("C-c: exit %d:\n%s", obs.ExitCode, res.Text)
	}

	// Nothing runs now.
	res, _ = f.run(t, cmd(""))
	if !res.IsError || !strings.Contains(res.Text, "No command is running") {
		t.Fatalf("empty command with nothing running:\n%s", res.Text)
	}
	res, _ = f.run(t, input("C-c"))
	if !res.IsError || !strings.Contains(res.Text, "nothing to send input to") {
		t.Fatalf("input with nothing running:\n%s", res.Text)
	}
	res, obs = f.run(t, cmd("echo after"))
	if out, res, _ := f.settle(t, res, obs); res.IsError || out != "after" {
		t.Fatalf("after: %q:\n%s", out, res.Text)
	}
}

// TestHardTimeout: a timeout set on the call ends it even while the command keeps printing
// (the no-change timeout would not).
func TestHardTimeout(t *testing.T) {
	f := newSession(t, time.Minute)
	timeout := 0.3
	started := filepath.Join(f.dir, "ticks.started")
	ticks := "sh -c 'touch " + started + "; for i in 1 2 3 4 5 6 7 8 9 10; do echo tick; sleep 0.1; done; exec sleep 100'"
	res, obs := f.run(t, tool.TerminalArgs{Command: ticks, Timeout: &timeout})
	if obs.ExitCode != -1 || !obs.Timeout || !strings.Contains(res.Text, "after its timeout of 0.3 seconds") {
		t.Fatalf("exit %d timeout %v:\n%s", obs.ExitCode, obs.Timeout, res.Text)
	}
	waitFile(t, started) // see sleeper
	res, obs = f.run(t, input("C-c"))
	if obs.ExitCode != 130 {
		t.Fatalf("C-c: %s", res.Text)
	}
}

func TestInteractiveInput(t *testing.T) {
	f := newSession(t, 300*time.Millisecond)
	res, obs := f.run(t, cmd("read -p 'name? ' x; echo got $x"))
	if obs.ExitCode != -1 {
		t.Fatalf("read: exit %d:\n%s", obs.ExitCode, res.Text)
	}
	if out := f.firstOutput(t, res, obs); out != "name? " {
		t.Fatalf("read: %q", out)
	}
	res, obs = f.run(t, input("hello"))
	if out, res, obs := f.settle(t, res, obs); res.IsError || obs.ExitCode != 0 || out != "got hello" {
		t.Fatalf("input: exit %d %q:\n%s", obs.ExitCode, out, res.Text)
	}

	// C-d ends the input of cat.
	res, obs = f.run(t, cmd("cat > typed.txt"))
	if obs.ExitCode != -1 {
		t.Fatalf("cat: %s", res.Text)
	}
	f.run(t, input("line 1"))
	res, obs = f.run(t, input("C-d"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 0 {
		t.Fatalf("C-d: %s", res.Text)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, "typed.txt"))
	if err != nil || string(b) != "line 1\n" {
		t.Fatalf("typed.txt %q %v", b, err)
	}

	sleep, started := f.sleeper("sleep")
	f.run(t, cmd(sleep))
	res, _ = f.run(t, input("C-z"))
	if !res.IsError || !strings.Contains(res.Text, "job control") {
		t.Fatalf("C-z: %s", res.Text)
	}
	waitFile(t, started)
	res, obs = f.run(t, input("c-C"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 130 {
		t.Fatalf("c-C: %s", res.Text)
	}
}

func TestReset(t *testing.T) {
	f := newSession(t, 300*time.Millisecond)
	res, obs := f.run(t, cmd("export KEEP=1; cd /; sleep 100 & echo $!"))
	bg, res, obs := f.settle(t, res, obs)
	if obs.ExitCode != 0 {
		t.Fatal(res.Text)
	}
	if i := strings.LastIndexByte(bg, '\n'); i >= 0 {
		bg = bg[i+1:]
	}
	oldPID := obs.Metadata.PID
	f.run(t, cmd("sleep 100"))

	res, obs = f.run(t, tool.TerminalArgs{Command: "echo ${KEEP:-gone}; pwd", Reset: true})
	if !strings.Contains(res.Text, "reset") {
		t.Fatalf("reset: %s", res.Text)
	}
	out, res, obs := f.settle(t, res, obs)
	if res.IsError || obs.ExitCode != 0 || out != "gone\n"+f.dir {
		t.Fatalf("reset: %q:\n%s", out, res.Text)
	}
	if obs.Metadata.PID == oldPID {
		t.Fatal("reset kept the old shell")
	}
	waitGone(t, strconv.Itoa(oldPID))
	waitGone(t, bg)

	res, obs = f.run(t, tool.TerminalArgs{Command: "", Reset: true})
	if res.IsError || !strings.Contains(res.Text, "reset") {
		t.Fatalf("reset alone: %s", res.Text)
	}
	f.settle(t, res, obs)
}

func TestShellExit(t *testing.T) {
	f := newSession(t, time.Minute)
	res, obs := f.run(t, cmd("exit 3"))
	if obs.ExitCode != 3 || !strings.Contains(res.Text, "shell exited") {
		t.Fatalf("exit: exit %d:\n%s", obs.ExitCode, res.Text)
	}
	res, obs = f.run(t, cmd("echo back"))
	if res.IsError || obs.Content[0].Text != "back" || !strings.Contains(res.Text, "new session") {
		t.Fatalf("after exit: %s", res.Text)
	}
}

var savedFile = regexp.MustCompile(`is in (\S+\.txt)`)

func TestOutputClipped(t *testing.T) {
	f := newSession(t, time.Minute)
	res, obs := f.run(t, cmd("seq 1 20000"))
	if obs.ExitCode != 0 {
		t.Fatal(res.Text)
	}
	out := obs.Content[0].Text
	if n := len([]rune(out)); n > DefaultMaxOutputChars {
		t.Fatalf("output has %d characters", n)
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "19999\n20000") || !strings.Contains(out, "response clipped") {
		t.Fatalf("clipped output: %.200s ... %.200s", out, out[len(out)-200:])
	}
	m := savedFile.FindStringSubmatch(out)
	if m == nil || filepath.Dir(m[1]) != f.out {
		t.Fatalf("no saved file named in %q", out)
	}
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	b, err := os.ReadFile(m[1])
	if err != nil || string(b) != strings.TrimSuffix(want.String(), "\n") {
		t.Fatalf("saved output: %v, %d bytes", err, len(b))
	}
	// The model reads it back through the terminal.
	res, obs = f.run(t, cmd("sed -n '12345p' "+m[1]))
	if obs.Content[0].Text != "12345" {
		t.Fatalf("read back: %s", res.Text)
	}
}

func TestRejected(t *testing.T) {
	f := newSession(t, time.Minute)
	tests := []struct {
		name, command, want string
	}{
		{"two lines", "echo a\necho b", "holds 2"},
		{"three with comment", "cd /tmp\n# now list\nls\npwd", "holds 3"},
		{"json", `{"command": "ls"}`, "JSON data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := f.run(t, cmd(tt.command))
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("not rejected as %q:\n%s", tt.want, res.Text)
			}
		})
	}
	if res, obs := f.run(t, cmd("echo still fine")); res.IsError || obs.Content[0].Text != "still fine" {
		t.Fatalf("after rejections: %s", res.Text)
	}
}

func TestLongLine(t *testing.T) {
	f := newSession(t, time.Minute)
	word := strings.Repeat("x", 10000)
	res, obs := f.run(t, cmd("echo "+word+" | wc -c"))
	if obs.ExitCode != 0 || obs.Content[0].Text != "10001" {
		t.Fatalf("long line: %.300s", res.Text)
	}
	entries, _ := os.ReadDir(f.out)
	if len(entries) != 0 {
		t.Fatalf("script left in %s: %v", f.out, entries)
	}
}

func TestCloseEndsWaitingRun(t *testing.T) {
	f := newSession(t, time.Minute)
	started := filepath.Join(f.dir, "started")
	done := make(chan tool.Result, 1)
	go func() { done <- f.s.Run(context.Background(), cmd("touch "+started+"; sleep 100"), Waits{}) }()
	waitFile(t, started)
	f.s.Close()
	select {
	case res := <-done:
		if !strings.Contains(res.Text, "shell exited") {
			t.Fatalf("after close: %s", res.Text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of Close")
	}
	if res := f.s.Run(context.Background(), cmd("echo x"), Waits{}); !res.IsError {
		t.Fatalf("Run after Close: %s", res.Text)
	}
	f.s.Close()
}

// TestCancelledCall: a call whose context ends leaves the command running and what it
// printed to the next call, which nobody gave up on.
func TestCancelledCall(t *testing.T) {
	f := newSession(t, time.Minute)
	sleep, started := f.sleeper("sleep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitFile(t, started)
		cancel()
	}()
	res := f.s.Run(ctx, cmd("echo begun; "+sleep), Waits{})
	if !strings.Contains(res.Text, "cancelled") {
		t.Fatalf("cancelled: %s", res.Text)
	}
	next, obs := f.run(t, input("C-c"))
	if obs.ExitCode != 130 {
		t.Fatalf("C-c: %s", next.Text)
	}
	if strings.Contains(res.Text, "begun") || !strings.Contains(next.Text, "begun") {
		t.Fatalf("the output before the cancel is lost:\n%s\n%s", res.Text, next.Text)
	}
}

// waitFile waits until path exists. Safe in any goroutine: it does not end the test.
func waitFile(t *testing.T, path string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil || time.Now().After(deadline) {
			if err != nil {
				t.Errorf("%s never appeared: %v", path, err)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGone waits until pid no longer runs (a zombie counts as gone).
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s still runs: %s", pid, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestColourForPeopleNotTheModel: the observation keeps a command's colours for clients to
// show; the model's text has none.
func TestColourForPeopleNotTheModel(t *testing.T) {
	f := newSession(t, 10*time.Second)
	res, obs := f.run(t, cmd(`printf '\033[31mred\033[0m plain\n'`))
	out, res, _ := f.settle(t, res, obs)
	if !strings.Contains(out, "\x1b[31mred\x1b[0m plain") {
		t.Errorf("observation content %q lost the colour", out)
	}
	if strings.ContainsRune(res.Text, 0x1b) || !strings.Contains(res.Text, "red plain") {
		t.Errorf("the model's text %q holds an escape or lost the output", res.Text)
	}
}

// TestEmptyCommandRepeatsTheEnd: with nothing running, an empty command repeats how the last
// command ended and what it printed (the call that reported it may have been cut off), until
// the next command starts or the terminal is reset.
func TestEmptyCommandRepeatsTheEnd(t *testing.T) {
	f := newSession(t, time.Minute)
	res, obs := f.run(t, cmd("sh -c 'echo first words; exit 3'"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 3 {
		t.Fatalf("exit %d:\n%s", obs.ExitCode, res.Text)
	}
	for range 2 {
		res, _ = f.run(t, cmd(""))
		if !res.IsError || !strings.Contains(res.Text, "No command is running") ||
			!strings.Contains(res.Text, "finished with exit code 3") || !strings.Contains(res.Text, "first words") {
			t.Fatalf("empty command after the end:\n%s", res.Text)
		}
	}
	res, obs = f.run(t, cmd("true"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 0 {
		t.Fatalf("true: exit %d:\n%s", obs.ExitCode, res.Text)
	}
	res, _ = f.run(t, cmd(""))
	if !strings.Contains(res.Text, `"true", finished with exit code 0.`) || strings.Contains(res.Text, "first words") {
		t.Fatalf("empty command after true:\n%s", res.Text)
	}
	// Of a long output, the end is repeated, within the bound of one observation.
	res, obs = f.run(t, cmd("seq 1 100000"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 0 {
		t.Fatalf("seq: exit %d:\n%.500s", obs.ExitCode, res.Text)
	}
	res, _ = f.run(t, cmd(""))
	if !strings.HasSuffix(strings.TrimSpace(res.Text), "\n99999\n100000") || len(res.Text) > DefaultMaxOutputChars {
		t.Fatalf("empty command after seq (%d bytes): %.300s ... %s", len(res.Text), res.Text, lastRunes(res.Text, 100))
	}
	f.run(t, tool.TerminalArgs{Reset: true})
	if res, _ = f.run(t, cmd("")); strings.Contains(res.Text, "last command") {
		t.Fatalf("empty command after a reset:\n%s", res.Text)
	}
}

// TestCancelledCallLeavesTheEnd: a call whose context has ended does not take the end of a
// command that finished meanwhile; the next call reports it as usual.
func TestCancelledCallLeavesTheEnd(t *testing.T) {
	f := newSession(t, 50*time.Millisecond)
	gate := filepath.Join(f.dir, "gate")
	res, obs := f.run(t, cmd("until [ -e gate ]; do sleep 0.01; done; echo released"))
	if obs.ExitCode != -1 {
		t.Fatalf("the command ended before its gate opened:\n%s", res.Text)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		f.s.mu.Lock()
		_, ended := f.s.sh.state()
		f.s.mu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not end within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // the lock or the wait: either way the call ends cancelled
		if res := f.s.Run(ctx, cmd(""), Waits{}); !res.IsError || !strings.Contains(res.Text, "cancelled") {
			t.Fatalf("cancelled call:\n%s", res.Text)
		}
	}
	res, obs = f.run(t, cmd(""))
	if res.IsError || obs.ExitCode != 0 || !strings.Contains(res.Text, "released") {
		t.Fatalf("the call after the cancelled ones: exit %d:\n%s", obs.ExitCode, res.Text)
	}
}
