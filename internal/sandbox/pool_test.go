package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// countingKeys makes the service's keys known to the test: "key-1", "key-2", ... in the
// order the service asks for them (pool secrets and session keys alike).
type countingKeys struct {
	mu   sync.Mutex
	keys []string
}

func (k *countingKeys) next() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := fmt.Sprintf("key-%d-%s", len(k.keys)+1, sandboxtest.NewKey()[:8])
	k.keys = append(k.keys, key)
	return key
}

func (k *countingKeys) all() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.keys)
}

// pooledEnv is newEnv with a default spec that sets a variable, and a service that keeps a
// pool of size of it, filled by Run; mods change the service's other options.
func pooledEnv(t *testing.T, size int, mods ...func(*sandbox.ServiceOptions)) (*env, *sandbox.Service, *countingKeys, func()) {
	t.Helper()
	e := newEnv(t)
	spec := sandboxtest.RuntimeSpec("default")
	spec.InitialEnv["SPEC_VAR"] = "from-the-spec"
	must(t, e.store.PutSpec(context.Background(), spec))
	keys := &countingKeys{}
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) {
		o.Pools = map[string]int{"": size}
		o.NewKey = keys.next
		for _, mod := range mods {
			mod(o)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return e, s, keys, stop
}

func waitPool(t *testing.T, s *sandbox.Service, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a pool of %d", n), func() bool { return s.PoolReady("") == n })
}

func listIDs(t *testing.T, b sandbox.Backend) []string {
	t.Helper()
	insts, err := b.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, inst := range insts {
		ids = append(ids, inst.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestPoolClaim: a start takes a sandbox of the pool, RUNNING at once, which holds its
// owner's key and the spec's environment and nothing of anyone else's (no other key, no
// pool secret, an empty workspace); the pool refills behind it.
func TestPoolClaim(t *testing.T) {
	e, s, keys, _ := pooledEnv(t, 2)
	ctx := testContext(t)
	waitPool(t, s, 2)
	pooled := listIDs(t, e.backend())

	a, err := s.Start(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != sandbox.StatusRunning || !slices.Contains(pooled, a.ID) {
		t.Fatalf("start: %s %s, want a RUNNING sandbox of the pool %q", a.ID, a.Status, pooled)
	}
	b := startRunning(t, s, "bob")
	if !slices.Contains(pooled, b.ID) || b.ID == a.ID {
		t.Fatalf("bob's sandbox %s, alice's %s, pool %q", b.ID, a.ID, pooled)
	}
	waitPool(t, s, 2)

	aKey, err := s.SessionKey(ctx, "alice", a.ID)
	must(t, err)
	bKey, err := s.SessionKey(ctx, "bob", b.ID)
	must(t, err)
	ca, err := runtimeclient.NewClient(a.Instance.Endpoint, aKey)
	must(t, err)
	defer ca.CloseIdleConnections()
	res, err := ca.Run(ctx, runtimeclient.CommandRequest{Command: "ls -A"})
	must(t, err)
	if res.Output != "" {
		t.Fatalf("the workspace of a claimed sandbox holds:\n%s", res.Output)
	}
	res, err = ca.Run(ctx, runtimeclient.CommandRequest{Command: "env", Env: map[string]string{"SECRET_OF_ALICE": "s3"}})
	must(t, err)
	if !strings.Contains(res.Output, "SPEC_VAR=from-the-spec") || !strings.Contains(res.Output, "SECRET_OF_ALICE=s3") {
		t.Fatalf("alice's commands lack the spec's environment or her secret:\n%s", res.Output)
	}
	for _, k := range keys.all() {
		if strings.Contains(res.Output, k) {
			t.Fatalf("a key or pool secret (%s) is in alice's sandbox:\n%s", k, res.Output)
		}
	}
	// Each key opens its own sandbox only.
	cb, err := runtimeclient.NewClient(b.Instance.Endpoint, aKey)
	must(t, err)
	defer cb.CloseIdleConnections()
	var se *runtimeclient.StatusError
	if _, err := cb.Identity(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("alice's key on bob's sandbox: %v, want 401", err)
	}
	if sb, err := s.SandboxForSessionKey(ctx, bKey); err != nil || sb.ID != b.ID || sb.OwnerID != "bob" {
		t.Fatalf("bob's key finds %+v, %v", sb, err)
	}
	// A claimed sandbox takes no second delivery, whatever key it is sent with.
	for _, k := range append(keys.all(), aKey) {
		c, err := runtimeclient.NewClient(a.Instance.Endpoint, k)
		must(t, err)
		if _, err := c.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: "mine"}); err == nil {
			t.Fatalf("a claimed sandbox took a delivery with %s", k)
		}
		c.CloseIdleConnections()
	}
	// Pause and resume as a cold one does.
	must(t, s.Pause(ctx, "alice", a.ID))
	must(t, s.Resume(ctx, "alice", a.ID))
}

// TestPoolConcurrentClaims: starts at once, more than the pool holds, each get a sandbox of
// their own; those beyond the pool start cold.
func TestPoolConcurrentClaims(t *testing.T) {
	_, s, _, _ := pooledEnv(t, 2)
	ctx := testContext(t)
	waitPool(t, s, 2)
	const n = 5
	sbs := make([]sandbox.Sandbox, n)
	var wg sync.WaitGroup
	var warm atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("user%d", i)
			sb, err := s.Start(ctx, owner, "")
			if err != nil {
				t.Errorf("start %d: %v", i, err)
				return
			}
			if sb.Status == sandbox.StatusRunning {
				warm.Add(1)
			}
			if sbs[i], err = s.WaitRunning(ctx, owner, sb.ID); err != nil {
				t.Errorf("wait %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ids := map[string]bool{}
	for i, sb := range sbs {
		if ids[sb.ID] {
			t.Fatalf("two starts got sandbox %s", sb.ID)
		}
		ids[sb.ID] = true
		key, err := s.SessionKey(ctx, sb.OwnerID, sb.ID)
		must(t, err)
		c, err := runtimeclient.NewClient(sb.Instance.Endpoint, key)
		must(t, err)
		if id, err := c.Identity(ctx); err != nil || id.SandboxID != sb.ID {
			t.Fatalf("sandbox %d answers %+v, %v", i, id, err)
		}
		c.CloseIdleConnections()
	}
	// The filler may have put one back in time for a late start; at most the pool and what
	// it refilled meanwhile came warm, and at least one came from the pool.
	if w := warm.Load(); w < 1 || w > n-1 {
		t.Fatalf("%d of %d starts came from the pool", w, n)
	}
}

// TestPoolEmpty: a start finds the pool empty (the filler has not run) and starts cold.
func TestPoolEmpty(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) { o.Pools = map[string]int{"": 2} })
	sb, err := s.Start(testContext(t), "alice", "")
	if err != nil || sb.Status != sandbox.StatusStarting {
		t.Fatalf("start with an empty pool: %s %v, want a cold start (STARTING)", sb.Status, err)
	}
	startRunning(t, s, "alice")
}

// TestPoolSettling: a claim by StartSettling holds back the refill until its starter says it
// is settled, while Start's claims let it begin at once; then the pool refills.
func TestPoolSettling(t *testing.T) {
	e, s, _, _ := pooledEnv(t, 2, func(o *sandbox.ServiceOptions) { o.PoolHold = time.Hour })
	ctx := testContext(t)
	waitPool(t, s, 2)
	a, settled, err := s.StartSettling(ctx, "alice", "")
	if err != nil || a.Status != sandbox.StatusRunning {
		t.Fatalf("start settling: %s %v, want a RUNNING sandbox of the pool", a.Status, err)
	}
	b := startRunning(t, s, "bob") // the pool's other sandbox; its Start wakes the filler
	c := startRunning(t, s, "carol")
	if c.Status != sandbox.StatusRunning || c.ID == a.ID || c.ID == b.ID {
		t.Fatalf("carol's start: %s %s", c.ID, c.Status)
	}
	// Carol's start was cold: the filler, woken before it began, started nothing meanwhile.
	want := []string{a.ID, b.ID, c.ID}
	slices.Sort(want)
	if ids := listIDs(t, e.backend()); !slices.Equal(ids, want) || s.PoolReady("") != 0 {
		t.Fatalf("while alice's start settles the machine holds %q (pool %d), want only %q", ids, s.PoolReady(""), want)
	}
	settled()
	settled()
	waitPool(t, s, 2)
}

// TestPoolHoldEnds: a starter that never says it is settled holds the refill back for
// PoolHold only.
func TestPoolHoldEnds(t *testing.T) {
	_, s, _, _ := pooledEnv(t, 1, func(o *sandbox.ServiceOptions) { o.PoolHold = time.Millisecond })
	waitPool(t, s, 1)
	a, settled, err := s.StartSettling(testContext(t), "alice", "")
	if err != nil || a.Status != sandbox.StatusRunning {
		t.Fatalf("start settling: %s %v, want a RUNNING sandbox of the pool", a.Status, err)
	}
	defer settled()
	waitPool(t, s, 1)
}

// TestPoolDrain: Close destroys the pool's sandboxes and leaves the claimed ones running.
func TestPoolDrain(t *testing.T) {
	e, s, _, stop := pooledEnv(t, 2)
	waitPool(t, s, 2)
	claimed := startRunning(t, s, "alice")
	waitPool(t, s, 2)
	stop()
	must(t, s.Close())
	if ids := listIDs(t, e.backend()); !slices.Equal(ids, []string{claimed.ID}) {
		t.Fatalf("after the drain the machine holds %q, want only the claimed %s", ids, claimed.ID)
	}
	if _, err := s.Get(testContext(t), "alice", claimed.ID); err != nil {
		t.Fatal(err)
	}
}

// TestPoolKilled: a server that stops without draining its pool (killed) leaves sandboxes
// with no record; the next server's Reconcile destroys them, and keeps the claimed ones.
func TestPoolKilled(t *testing.T) {
	e, s, _, stop := pooledEnv(t, 2)
	waitPool(t, s, 2)
	claimed := startRunning(t, s, "alice")
	waitPool(t, s, 2)
	stop() // the filler stops; the pool stays up, as after a kill

	next := e.service(e.backend(), nil)
	must(t, next.Reconcile(testContext(t)))
	if ids := listIDs(t, e.backend()); !slices.Equal(ids, []string{claimed.ID}) {
		t.Fatalf("after the reconcile the machine holds %q, want only the claimed %s", ids, claimed.ID)
	}
	if sb, err := next.Get(testContext(t), "alice", claimed.ID); err != nil || sb.Status != sandbox.StatusRunning {
		t.Fatalf("claimed sandbox after the reconcile: %s %v", sb.Status, err)
	}
}

// TestPoolSpecChanged: a changed spec empties its pool of sandboxes of the old one, and a
// start never gets one of them.
func TestPoolSpecChanged(t *testing.T) {
	e, s, _, _ := pooledEnv(t, 1)
	ctx := testContext(t)
	waitPool(t, s, 1)
	old := listIDs(t, e.backend())
	spec, err := e.store.GetSpec(ctx, "default")
	must(t, err)
	spec.Limits.PIDs = 999
	must(t, e.store.PutSpec(ctx, spec))
	sb := startRunning(t, s, "alice")
	if slices.Contains(old, sb.ID) {
		t.Fatalf("a start got sandbox %s of the old spec", sb.ID)
	}
	waitFor(t, "the old pooled sandbox to go", func() bool {
		ids := listIDs(t, e.backend())
		return !slices.Contains(ids, old[0]) && s.PoolReady("") == 1
	})
}
