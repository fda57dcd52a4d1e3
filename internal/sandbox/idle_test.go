package sandbox_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
)

// TestIdleAutoPause: an unused sandbox is paused after the idle timeout and reported; a held
// one is not, nor one whose runtime keeps being used; a resumed one counts from its resume.
func TestIdleAutoPause(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var reported []string
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) {
		o.IdleTimeout = 400 * time.Millisecond
		o.WatchInterval = 20 * time.Millisecond
		o.OnIdlePause = func(_ context.Context, sb sandbox.Sandbox, idle time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if sb.Status != sandbox.StatusPaused || idle < 400*time.Millisecond {
				t.Errorf("reported %s as %s after %v", sb.ID, sb.Status, idle)
			}
			reported = append(reported, sb.ID)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	start := func() sandbox.Sandbox {
		sb, err := s.Start(ctx, "alice", "")
		must(t, err)
		sb, err = s.WaitRunning(ctx, "alice", sb.ID)
		must(t, err)
		return sb
	}
	idle, held, used := start(), start(), start()
	release := s.Hold(held.ID)
	// used: a runtime call every 100 ms keeps it awake.
	usedDone := make(chan struct{})
	go func() {
		defer close(usedDone)
		for i := 0; i < 12; i++ {
			c, err := s.Client(ctx, "alice", used.ID)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := c.Run(ctx, runtime.CommandRequest{Command: "true"}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	status := func(id string) sandbox.Status {
		sb, err := s.Get(ctx, "alice", id)
		must(t, err)
		return sb.Status
	}
	deadline := time.Now().Add(10 * time.Second)
	for status(idle.ID) != sandbox.StatusPaused {
		if time.Now().After(deadline) {
			t.Fatal("the idle sandbox was never paused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-usedDone
	if st := status(used.ID); st != sandbox.StatusRunning {
		t.Fatalf("a sandbox in use was paused: %s", st)
	}
	if st := status(held.ID); st != sandbox.StatusRunning {
		t.Fatalf("a held sandbox was paused: %s", st)
	}
	// Released, the held one goes to sleep too, counted from the release.
	release()
	released := time.Now()
	for status(held.ID) != sandbox.StatusPaused {
		if time.Now().After(deadline) {
			t.Fatal("the released sandbox was never paused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(released); d < 400*time.Millisecond {
		t.Fatalf("paused %v after its release, before the idle timeout", d)
	}
	// A resumed sandbox is awake again and counts from the resume.
	must(t, s.Resume(ctx, "alice", idle.ID))
	if st := status(idle.ID); st != sandbox.StatusRunning {
		t.Fatalf("after resume: %s", st)
	}
	mu.Lock()
	got := append([]string(nil), reported...)
	mu.Unlock()
	// The used one fell asleep too once its use stopped; the idle one went first.
	if len(got) != 3 || got[0] != idle.ID || !slices.Contains(got, held.ID) || !slices.Contains(got, used.ID) {
		t.Fatalf("reported %v, want %s first, then %s and %s", got, idle.ID, held.ID, used.ID)
	}
	list, _, err := s.Search(ctx, "alice", paging.Query{})
	must(t, err)
	for _, sb := range list {
		must(t, s.Delete(ctx, "alice", sb.ID))
	}
}
