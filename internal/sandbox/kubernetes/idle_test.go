package kubernetes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// testClock is a clock a test moves forward.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestIdleAcrossReplicas: of two replicas on one store, the one that watches the remote
// backend's sandboxes (one at a time) does not pause a sandbox that the other holds (its
// agent works in it) however long it looks idle from there; once the other lets go and the
// idle time passes, it pauses it.
func TestIdleAcrossReplicas(t *testing.T) {
	needCluster(t)
	store := sandboxtest.NewMemStore()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := store.PutSpec(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Now()}
	// The role of watching is claimed for three watch intervals of the store's own clock: at
	// the default interval, a pod's start on a busy machine outlasted the watcher's claim, the
	// other replica's first Watch took the role over, and the watcher's passes did nothing.
	// An hour's interval keeps the role where the test put it (Run, which ticks on it, is not
	// called).
	replica := func(name string) *sandbox.Service {
		s := sandbox.NewService(sandbox.ServiceOptions{
			Store: store, Backend: newBackend(t, nil), Sealer: sandboxtest.Sealer{},
			DefaultSpec: testSpec().ID, Node: name, Replica: name, StartTimeout: 5 * time.Minute,
			IdleTimeout: time.Minute, Now: clock.Now, WatchInterval: time.Hour,
		})
		t.Cleanup(func() { s.Close() })
		return s
	}
	watcher, worker := replica("replica-a"), replica("replica-b")
	if err := watcher.Watch(ctx); err != nil { // takes the role of watching
		t.Fatal(err)
	}
	sb, err := worker.Start(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Delete(context.Background(), "alice", sb.ID) })
	if _, err := worker.WaitRunning(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	release := worker.Hold(sb.ID)
	status := func() sandbox.Status {
		got, err := watcher.Get(ctx, "alice", sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	for range 3 {
		clock.Advance(2 * time.Minute)
		if err := worker.Watch(ctx); err != nil { // tells the store the sandbox is in use
			t.Fatal(err)
		}
		if err := watcher.Watch(ctx); err != nil {
			t.Fatal(err)
		}
		if st := status(); st != sandbox.StatusRunning {
			t.Fatalf("the watching replica paused a sandbox the other holds: %s", st)
		}
	}
	release()
	if err := worker.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if err := watcher.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(); st != sandbox.StatusPaused {
		t.Fatalf("a sandbox idle for two minutes of a one-minute timeout is %s", st)
	}
}
