package terminal

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// Every call comes back, whatever its command does. The timeouts here are short so that the
// tests run fast, and they assert on what the observations say, never on how long a call took.

// TestCeilingWhileOutputKeepsComing: yes never stops printing, so the no-change timeout never
// ends its call; the ceiling does, with what it printed so far, bounded, and a note that it
// still runs. C-c then stops it.
func TestCeilingWhileOutputKeepsComing(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: 10 * time.Minute, MaxWait: 300 * time.Millisecond,
		MaxBufferedOutput: 64 << 10})
	for i, a := range []tool.TerminalArgs{cmd("yes"), cmd("")} {
		res, obs := f.run(t, a)
		if res.IsError || obs.ExitCode != -1 || !obs.Timeout || !strings.Contains(res.Text, "still running after 0.3 seconds: one call waits at most that long, even while the command keeps printing") {
			t.Fatalf("call %d: exit %d timeout %v:\n%.2000s", i, obs.ExitCode, obs.Timeout, res.Text)
		}
		out := obs.Content[0].Text
		if n := len([]rune(out)); n > DefaultMaxOutputChars {
			t.Fatalf("call %d: %d characters of output", i, n)
		}
		// A call's output starts where the last one's ended, maybe between a y and its newline.
		if first, _, _ := strings.Cut(strings.TrimLeft(out, "\n"), "\n"); out != "" && first != "y" {
			t.Fatalf("call %d: output starts %.100q", i, out)
		}
		if strings.Contains(res.Text, "were not kept") {
			checkSaved(t, out, 64<<10)
		}
	}
	res, obs := f.run(t, input("C-c"))
	if _, res, obs = f.settle(t, res, obs); res.IsError || obs.ExitCode != 130 {
		t.Fatalf("C-c: exit %d:\n%.2000s", obs.ExitCode, res.Text)
	}
}

// TestOutputBeyondTheBuffer: a command that prints more than the buffer holds between two
// calls: the observation keeps its start and end, says how much was left out, and the file it
// names holds what was kept, no more than the buffer's size.
func TestOutputBeyondTheBuffer(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: time.Minute, MaxWait: 10 * time.Minute,
		MaxBufferedOutput: 64 << 10})
	res, obs := f.run(t, cmd("seq 1 100000"))
	if obs.ExitCode != 0 {
		t.Fatalf("exit %d:\n%.2000s", obs.ExitCode, res.Text)
	}
	out := obs.Content[0].Text
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "99999\n100000") {
		t.Fatalf("output %.100q ... %q", out, out[max(0, len(out)-100):])
	}
	if !strings.Contains(res.Text, "bytes in the middle of the output were not kept: between two calls the terminal keeps the first and the last 32 KiB") {
		t.Fatalf("no note of what was dropped:\n%s", res.Text[max(0, len(res.Text)-600):])
	}
	if !strings.Contains(out, "The output the terminal kept") {
		t.Fatalf("the clip note calls the output full: %q", out[len(out)/2-500:len(out)/2+500])
	}
	saved := checkSaved(t, out, 64<<10)
	if !strings.HasPrefix(saved, "1\n2\n3\n") || !strings.HasSuffix(saved, "99999\n100000") || !strings.Contains(saved, "bytes of output were not kept ...]") {
		t.Fatalf("saved output %.100q ... %q", saved, saved[max(0, len(saved)-100):])
	}
}

// checkSaved reads the file a clipped output names and checks it is no larger than the buffer
// (and the line that marks the gap).
func checkSaved(t *testing.T, out string, buffer int) string {
	t.Helper()
	m := savedFile.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no saved file named in %.300q", out)
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > buffer+100 {
		t.Fatalf("saved file %s holds %d bytes, more than the buffer's %d", m[1], len(b), buffer)
	}
	return string(b)
}

// TestQuietCommandComesBack: sleep infinity prints nothing; its call returns after the
// no-change timeout, and C-c, sent at once, stops it.
func TestQuietCommandComesBack(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: 300 * time.Millisecond, MaxWait: 10 * time.Minute})
	res, obs := f.run(t, cmd("sleep infinity"))
	if res.IsError || obs.ExitCode != -1 || !obs.Timeout || !strings.Contains(res.Text, "printed nothing new for 0.3 seconds") {
		t.Fatalf("exit %d timeout %v:\n%s", obs.ExitCode, obs.Timeout, res.Text)
	}
	res, obs = f.run(t, input("C-c"))
	if _, res, obs = f.settle(t, res, obs); res.IsError || obs.ExitCode != 130 {
		t.Fatalf("C-c: exit %d:\n%s", obs.ExitCode, res.Text)
	}
}

// TestTimeoutBeyondTheCeiling: a timeout longer than the ceiling is cut to it, and the note
// says so.
func TestTimeoutBeyondTheCeiling(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: 10 * time.Minute, MaxWait: 300 * time.Millisecond})
	timeout := 3600.0
	res, obs := f.run(t, tool.TerminalArgs{Command: "sleep infinity", Timeout: &timeout})
	if obs.ExitCode != -1 || !obs.Timeout || !strings.Contains(res.Text, "after 0.3 seconds: one call waits at most that long, less than the timeout of 3600 seconds you set") {
		t.Fatalf("exit %d timeout %v:\n%s", obs.ExitCode, obs.Timeout, res.Text)
	}
	res, obs = f.run(t, input("C-c"))
	if _, res, obs = f.settle(t, res, obs); obs.ExitCode != 130 {
		t.Fatalf("C-c: exit %d:\n%s", obs.ExitCode, res.Text)
	}
}

// TestCallWaits: a call's Waits override the session's options.
func TestCallWaits(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: 10 * time.Minute, MaxWait: 10 * time.Minute})
	res := f.s.Run(t.Context(), cmd("sleep infinity"), Waits{NoChange: 200 * time.Millisecond})
	if !strings.Contains(res.Text, "printed nothing new for 0.2 seconds") {
		t.Fatalf("no-change override:\n%s", res.Text)
	}
	res = f.s.Run(t.Context(), cmd(""), Waits{NoChange: 10 * time.Minute, Max: 200 * time.Millisecond})
	if !strings.Contains(res.Text, "still running after 0.2 seconds: one call waits at most that long") {
		t.Fatalf("ceiling override:\n%s", res.Text)
	}
	r, obs := f.run(t, input("C-c"))
	if _, r, obs = f.settle(t, r, obs); obs.ExitCode != 130 {
		t.Fatalf("C-c: exit %d:\n%s", obs.ExitCode, r.Text)
	}
}

// TestInterruptLoops: C-c stops a loop of short commands every time, although a signal that
// reaches a command between bash's fork and its exec is lost (the terminal sends it again).
func TestInterruptLoops(t *testing.T) {
	f := newSessionWith(t, Options{NoChangeTimeout: 50 * time.Millisecond, MaxWait: 10 * time.Minute})
	loops := []string{"while true; do sleep 0.01; done", "while true; do sleep 0; done"}
	for i := range 30 {
		loop := loops[i%len(loops)]
		res, obs := f.run(t, cmd(loop))
		if obs.ExitCode != -1 {
			t.Fatalf("round %d: the loop ended: %s", i, res.Text)
		}
		res, obs = f.run(t, input("C-c"))
		if _, res, obs = f.settle(t, res, obs); res.IsError || obs.ExitCode != 130 {
			t.Fatalf("round %d, %s: C-c: exit %d:\n%s", i, loop, obs.ExitCode, res.Text)
		}
	}
	// The shell is still usable, and no stray interrupt cut the next command.
	res, obs := f.run(t, cmd("echo after"))
	if out, res, obs := f.settle(t, res, obs); res.IsError || obs.ExitCode != 0 || out != "after" {
		t.Fatalf("after the loops: %q:\n%s", out, res.Text)
	}
}
