package sandbox_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// fakeClock is a clock that moves only when the test advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// idlePause is one report to OnIdlePause.
type idlePause struct {
	id     string
	status sandbox.Status
	idle   time.Duration
}

// TestIdleAutoPause: an unused sandbox is paused once the idle timeout has passed on the
// service's clock, and reported; a held one is not, nor one whose runtime was used since; a
// released one counts from its release, a resumed one from its resume. The clock moves only
// when the test says, and each watcher pass runs when the test calls Watch, so what is idle
// never depends on how fast the machine starts sandboxes.
func TestIdleAutoPause(t *testing.T) {
	const timeout = 10 * time.Minute
	e := newEnv(t)
	clock := newFakeClock()
	var mu sync.Mutex
	var reported []idlePause
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) {
		o.Now = clock.Now
		o.IdleTimeout = timeout
		o.OnIdlePause = func(_ context.Context, sb sandbox.Sandbox, idle time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, idlePause{sb.ID, sb.Status, idle})
		}
	})
	ctx := testContext(t)

	idle, held, used := startRunning(t, s, "alice"), startRunning(t, s, "alice"), startRunning(t, s, "alice")
	release := s.Hold(held.ID)
	defer release()

	names := map[string]string{idle.ID: "idle", held.ID: "held", used.ID: "used"}
	// pass advances the clock by d, runs one watcher pass, and checks the statuses after it.
	pass := func(step string, d time.Duration, want map[string]sandbox.Status) {
		t.Helper()
		clock.Advance(d)
		must(t, s.Watch(ctx))
		for id, status := range want {
			sb, err := s.Get(ctx, "alice", id)
			must(t, err)
			if sb.Status != status {
				t.Fatalf("%s: sandbox %s is %s, want %s", step, names[id], sb.Status, status)
			}
		}
	}
	all := func(idleSt, heldSt, usedSt sandbox.Status) map[string]sandbox.Status {
		return map[string]sandbox.Status{idle.ID: idleSt, held.ID: heldSt, used.ID: usedSt}
	}
	running, paused := sandbox.StatusRunning, sandbox.StatusPaused

	pass("just short of the timeout", timeout-time.Minute, all(running, running, running))
	c, err := s.Client(ctx, "alice", used.ID)
	must(t, err)
	if _, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "true"}); err != nil {
		t.Fatalf("run in the used sandbox: %v", err)
	}
	pass("at the timeout", time.Minute, all(paused, running, running))

	// Released, the held one counts from its release; the used one from its use.
	release()
	pass("the used one's timeout", timeout-time.Minute, all(paused, running, paused))
	pass("the released one's timeout", time.Minute, all(paused, paused, paused))

	// A resumed sandbox is awake again and counts from the resume.
	must(t, s.Resume(ctx, "alice", idle.ID))
	pass("just after the resume", timeout-time.Second, map[string]sandbox.Status{idle.ID: running})
	pass("the resumed one's timeout", time.Second, map[string]sandbox.Status{idle.ID: paused})

	mu.Lock()
	got := slices.Clone(reported)
	mu.Unlock()
	want := []idlePause{
		{idle.ID, paused, timeout}, {used.ID, paused, timeout}, {held.ID, paused, timeout}, {idle.ID, paused, timeout},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reported %+v, want %+v", got, want)
	}
}
