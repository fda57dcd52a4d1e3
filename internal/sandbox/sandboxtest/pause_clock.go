package sandboxtest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// tickScript appends the time ($EPOCHREALTIME, in seconds) to the file ticks every 50ms, in
// the background. It needs bash 5.
const tickScript = `(while true; do echo $EPOCHREALTIME >> ticks; sleep 0.05; done) > /dev/null 2>&1 &`

// pauseResumeWithoutHost is testPauseResume for a backend whose workspace the host cannot
// read (a Docker volume): a background loop writes down the time of each of its ticks, and
// once the sandbox is resumed, the runtime reads them back. No tick may fall between the
// moment Pause returned and the moment Resume was called. The sandbox shares the host's
// clock, which is what makes the times comparable.
func (s *suite) pauseResumeWithoutHost(t *testing.T, b sandbox.Backend, bx *box) {
	ctx := context.Background()
	run(t, bx.client, tickScript)
	waitTickAfter(t, bx.client, "ticks", time.Now())

	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	paused := time.Now()
	inspect(t, b, bx.inst, sandbox.StatePaused)
	answersNot(t, bx.client)
	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause twice: %v", err)
	}
	time.Sleep(time.Until(paused.Add(frozenWindow)))

	resumed := time.Now()
	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StateRunning)
	waitAnswers(t, bx.client)
	ticks := waitTickAfter(t, bx.client, "ticks", resumed)
	for _, tick := range ticks {
		if tick.After(paused) && tick.Before(resumed) {
			t.Fatalf("the background loop ticked at %s, %v after the sandbox was paused and %v before it was resumed",
				tick.Format(time.RFC3339Nano), tick.Sub(paused), resumed.Sub(tick))
		}
	}
	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume twice: %v", err)
	}
}

// waitTickAfter waits until the file (in the workspace, as tickScript writes it) holds a time
// after since, and returns them all.
func waitTickAfter(t *testing.T, c *runtimeclient.Client, file string, since time.Time) []time.Time {
	t.Helper()
	deadline := time.Now().Add(changeTimeout)
	for {
		ticks := readTicks(t, c, file)
		if len(ticks) > 0 && ticks[len(ticks)-1].After(since) {
			return ticks
		}
		if time.Now().After(deadline) {
			last := "none"
			if len(ticks) > 0 {
				last = ticks[len(ticks)-1].Format(time.RFC3339Nano)
			}
			t.Fatalf("%s: no tick after %s within %v (%d ticks, the last at %s)",
				file, since.Format(time.RFC3339Nano), changeTimeout, len(ticks), last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func readTicks(t *testing.T, c *runtimeclient.Client, file string) []time.Time {
	t.Helper()
	res := run(t, c, "cat '"+file+"' 2>/dev/null; true")
	var ticks []time.Time
	for line := range strings.Lines(res.Output) {
		line = strings.TrimSpace(line)
		sec, frac, ok := strings.Cut(line, ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		us, err2 := strconv.ParseInt(frac, 10, 64)
		if !ok || err1 != nil || err2 != nil || len(frac) != 6 {
			continue // a line being written, or a shell without $EPOCHREALTIME
		}
		ticks = append(ticks, time.Unix(s, us*1000))
	}
	return ticks
}
