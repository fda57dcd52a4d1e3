package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// testSandboxNodes: a sandbox's node is kept and read back by every read; AdoptSandboxes
// gives a node to the backend's records that have none, and to no other.
func testSandboxNodes(t *testing.T, s store.Store) {
	ctx := t.Context()
	onB := newSandbox(ownerA, "sb-on-b", 1, sandbox.StatusRunning)
	onB.Node = "node-b"
	legacy := newSandbox(ownerA, "sb-legacy", 2, sandbox.StatusPaused)
	legacy.Node = ""
	legacyDocker := newSandbox(ownerB, "sb-legacy-docker", 3, sandbox.StatusRunning)
	legacyDocker.Node, legacyDocker.Backend = "", "docker"
	for _, sb := range []sandbox.Sandbox{onB, legacy, legacyDocker} {
		ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	}
	got, err := s.GetSandbox(ctx, ownerA, onB.ID)
	ok(t, "get sandbox", err)
	equal(t, "node read back", got.Node, "node-b")
	live, err := s.LiveSandboxes(ctx)
	ok(t, "live sandboxes", err)
	nodes := map[string]string{}
	for _, sb := range live {
		nodes[sb.ID] = sb.Node
	}
	equal(t, "nodes of the live sandboxes", nodes, map[string]string{onB.ID: "node-b", legacy.ID: "", legacyDocker.ID: ""})
	listed, _, err := s.ListSandboxes(ctx, ownerA, paging.Query{Limit: 10})
	ok(t, "list sandboxes", err)
	for _, sb := range listed {
		if sb.ID == onB.ID && sb.Node != "node-b" {
			t.Fatalf("listed node %q", sb.Node)
		}
	}

	n, err := s.AdoptSandboxes(ctx, "process", "node-c")
	ok(t, "adopt sandboxes", err)
	equal(t, "sandboxes adopted", n, 1)
	all, err := s.AllSandboxes(ctx)
	ok(t, "all sandboxes", err)
	for _, sb := range all {
		nodes[sb.ID] = sb.Node
	}
	equal(t, "nodes after adoption", nodes, map[string]string{onB.ID: "node-b", legacy.ID: "node-c", legacyDocker.ID: ""})
	n, err = s.AdoptSandboxes(ctx, "process", "node-d")
	ok(t, "adopt sandboxes again", err)
	equal(t, "sandboxes adopted a second time", n, 0)
	listed, _, err = s.ListSandboxes(ctx, ownerA, paging.Query{Limit: 10})
	ok(t, "list sandboxes", err)
	for _, sb := range listed {
		if sb.ID == legacy.ID && sb.Node != "node-c" {
			t.Fatalf("a listing after the adoption shows node %q", sb.Node)
		}
	}
}

// testSandboxLimit: CreateSandbox refuses a record past the owner's STARTING and RUNNING
// sandboxes with ErrLimit and stores nothing; PAUSED, ERROR and MISSING ones and other
// owners' do not count; and starts racing for the last places never take more than there
// are, as replicas starting at once would.
func testSandboxLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, st := range []sandbox.Status{sandbox.StatusRunning, sandbox.StatusPaused, sandbox.StatusError, sandbox.StatusMissing} {
		ok(t, "create sandbox", s.CreateSandbox(ctx, newSandbox(ownerA, fmt.Sprintf("sb-%d", i), i, st), 0))
	}
	ok(t, "create sandbox of another owner", s.CreateSandbox(ctx, newSandbox(ownerB, "sb-b", 9, sandbox.StatusRunning), 0))
	is(t, "a start past the limit", s.CreateSandbox(ctx, newSandbox(ownerA, "sb-over", 10, sandbox.StatusStarting), 1), sandbox.ErrLimit)
	_, err := s.GetSandbox(ctx, ownerA, "sb-over")
	is(t, "the refused record", err, sandbox.ErrNotFound)

	const max, racers = 4, 8 // one place taken: three left for eight
	var wg sync.WaitGroup
	results := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			results[i] = s.CreateSandbox(ctx, newSandbox(ownerA, fmt.Sprintf("racer-%d", i), 20+i, sandbox.StatusStarting), max)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		switch {
		case err == nil:
			won++
		default:
			is(t, "a racing start", err, sandbox.ErrLimit)
		}
	}
	equal(t, "racing starts that got a place", won, max-1)
	n, err := s.CountSandboxes(ctx, ownerA, sandbox.StatusStarting, sandbox.StatusRunning)
	ok(t, "count sandboxes", err)
	equal(t, "live sandboxes after the race", n, max)
}

// testReconciler: a backend's reconciler role goes to one replica at a time: its holder keeps
// it, another gets it once it lapses, and each backend has its own.
func testReconciler(t *testing.T, s store.Store) {
	ctx := t.Context()
	claim := func(backend, holder string, ttl time.Duration) bool {
		t.Helper()
		got, err := s.ClaimReconciler(ctx, backend, holder, ttl)
		ok(t, "claim the reconciler", err)
		return got
	}
	if !claim("kubernetes", "a/1", time.Hour) || !claim("kubernetes", "a/1", time.Millisecond) {
		t.Fatal("the first replica did not get and keep the role")
	}
	if !claim("other", "b/1", time.Hour) {
		t.Fatal("another backend's role is not its own")
	}
	deadline := time.Now().Add(time.Minute)
	for !claim("kubernetes", "b/1", time.Hour) {
		if time.Now().After(deadline) {
			t.Fatal("a lapsed role did not go to another replica within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if claim("kubernetes", "a/1", time.Hour) {
		t.Fatal("the role went back while its new holder has it")
	}
}

// testSandboxActivity: a sandbox's use told to the store is read back; a later one wins, an
// earlier one changes nothing, and a sandbox never touched has none.
func testSandboxActivity(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := newSandbox(ownerA, "sb-a", 1, sandbox.StatusRunning)
	b := newSandbox(ownerA, "sb-b", 2, sandbox.StatusRunning)
	for _, sb := range []sandbox.Sandbox{a, b} {
		ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	}
	got, err := s.GetSandbox(ctx, ownerA, a.ID)
	ok(t, "get sandbox", err)
	equal(t, "activity of a sandbox never touched", got.ActiveAt.IsZero(), true)
	ok(t, "touch", s.TouchSandboxes(ctx, []string{a.ID}, at(10)))
	ok(t, "touch earlier", s.TouchSandboxes(ctx, []string{a.ID, b.ID}, at(5)))
	ok(t, "touch nothing", s.TouchSandboxes(ctx, nil, at(20)))
	got, err = s.GetSandbox(ctx, ownerA, a.ID)
	ok(t, "get sandbox", err)
	equal(t, "activity after a later and an earlier touch", got.ActiveAt, at(10))
	live, err := s.LiveSandboxes(ctx)
	ok(t, "live sandboxes", err)
	for _, sb := range live {
		if sb.ID == b.ID && !sb.ActiveAt.Equal(at(5)) {
			t.Fatalf("activity of %s in the live sandboxes: %v", b.ID, sb.ActiveAt)
		}
	}
}
