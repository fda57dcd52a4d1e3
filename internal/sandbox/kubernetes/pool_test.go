package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// poolTimeout bounds the waits for pods of a pool: a start on a loaded machine can take
// minutes.
const poolTimeout = 5 * time.Minute

// startMember starts a pooled sandbox of spec on b as a filler does, without marking it
// ready, and destroys it at cleanup.
func startMember(t *testing.T, b *Backend, spec sandbox.Spec, digest string) (sandbox.Instance, string) {
	t.Helper()
	id := sandboxtest.NewID()
	inst, secret, err := tryMember(t, b, id, spec, digest)
	if err != nil {
		t.Fatalf("pooled start: %v", err)
	}
	return inst, secret
}

// tryMember is startMember's start of the member id, whose failure is the caller's to judge.
func tryMember(t *testing.T, b *Backend, id string, spec sandbox.Spec, digest string) (sandbox.Instance, string, error) {
	t.Helper()
	secret := sandboxtest.NewKey()
	t.Cleanup(func() { _ = b.Destroy(context.Background(), sandbox.Instance{ID: id}) })
	ctx, cancel := context.WithTimeout(context.Background(), poolTimeout)
	defer cancel()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: id, Spec: sandbox.PoolSpec(spec), PoolSecret: secret, Pool: spec.ID, PoolDigest: digest})
	return inst, secret, err
}

// members lists b's pool members, by id.
func members(t *testing.T, b *Backend) map[string]sandbox.PoolMember {
	t.Helper()
	ms, err := b.PoolMembers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sandbox.PoolMember{}
	for _, m := range ms {
		out[m.Instance.ID] = m
	}
	return out
}

// TestPoolClaim: a pooled pod is a pool member, starting and then ready, whose listing gives
// what a claim needs (its runtime's pin, its pool's secret); of several claims of it at once,
// from two backends (two replicas), exactly one takes it, and a retirement after it fails;
// the claim leaves the Secret with the owner, the session key and a manifest without
// --pooled and with the spec's environment, and the pod out of the pool; delivering to it
// then makes it serve the owner's key.
func TestPoolClaim(t *testing.T) {
	needCluster(t)
	a, b := newBackend(t, nil), newBackend(t, nil)
	spec := testSpec()
	spec.InitialEnv = map[string]string{"POOL_TEST": "claimed"}
	inst, poolSecret := startMember(t, a, spec, "digest-1")

	m, ok := members(t, b)[inst.ID]
	if !ok || m.Ready || m.Pool != spec.ID || m.Digest != "digest-1" || m.Secret != poolSecret {
		t.Fatalf("the started member as listed: %+v (found %v)", m, ok)
	}
	if m.Instance.Workspace != inst.Workspace || string(m.Instance.State) != string(inst.State) {
		t.Fatalf("the listed instance %+v differs from the started %+v", m.Instance, inst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), poolTimeout)
	defer cancel()
	if err := a.MarkReady(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkReady(ctx, inst); !errors.Is(err, sandbox.ErrPoolTaken) {
		t.Fatalf("a second MarkReady: %v, want ErrPoolTaken", err)
	}
	m = members(t, b)[inst.ID]
	if !m.Ready {
		t.Fatalf("after MarkReady the member is not ready: %+v", m)
	}

	// Six claims at once, three through each backend, of the member as listed.
	const claimers = 6
	keys := make([]string, claimers)
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		keys[i] = sandboxtest.NewKey()
		be := []*Backend{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = be.Claim(ctx, m, sandbox.ClaimRequest{OwnerID: fmt.Sprintf("owner-%d", i), Spec: spec, SessionKey: keys[i]})
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("claims %d and %d both took the member", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, sandbox.ErrPoolTaken):
			t.Fatalf("claim %d: %v, want ErrPoolTaken", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no claim took the member: %v", errs)
	}
	if err := b.Retire(ctx, m); !errors.Is(err, sandbox.ErrPoolTaken) {
		t.Fatalf("a retirement after the claim: %v, want ErrPoolTaken", err)
	}
	if _, ok := members(t, a)[inst.ID]; ok {
		t.Fatal("the claimed sandbox is still a pool member")
	}
	s, err := a.getSecret(ctx, testNamespace, inst.ID)
	if err != nil || s == nil {
		t.Fatalf("the claimed sandbox's Secret: %v", err)
	}
	owner := fmt.Sprintf("owner-%d", winner)
	if s.Labels[labelOwner] != owner || s.Annotations[annotationOwner] != owner || string(s.Data[keySession]) != keys[winner] {
		t.Fatalf("the claimed Secret's owner %q/%q or session key is not the winner's", s.Labels[labelOwner], s.Annotations[annotationOwner])
	}
	manifest := string(s.Data[keyPod])
	for _, want := range []string{`"POOL_TEST"`, `"claimed"`, owner} {
		if !strings.Contains(manifest, want) {
			t.Errorf("the claimed manifest lacks %s", want)
		}
	}
	if strings.Contains(manifest, sandbox.PooledFlag) {
		t.Errorf("the claimed manifest still starts the runtime with %s", sandbox.PooledFlag)
	}

	c, err := sandboxtest.NewClient(a, inst, poolSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	waitAlive(t, ctx, c)
	if _, err := c.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: keys[winner], Env: spec.InitialEnv}); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	kc, err := sandboxtest.NewClient(a, inst, keys[winner])
	if err != nil {
		t.Fatal(err)
	}
	defer kc.CloseIdleConnections()
	res, err := kc.Run(ctx, runtimeclient.CommandRequest{Command: `echo "$POOL_TEST"`})
	if err != nil || res.Output != "claimed\n" {
		t.Fatalf("a command of the claimed sandbox: %q, %v", res.Output, err)
	}
}

// waitAlive waits until the pooled runtime answers its liveness probe.
func waitAlive(t *testing.T, ctx context.Context, c *runtimeclient.Client) {
	t.Helper()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		err := c.Alive(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pooled runtime did not answer: %v", err)
		case <-time.After(delay):
		}
	}
}

// TestPoolServices: two sandbox services of one store on the cluster, as two replicas of a
// server. With the pool empty a start is cold. The replica that reconciles fills the pool;
// starts on both replicas at once claim from it and never the same pod: every start gets a
// sandbox of its own, those claimed are RUNNING when Start returns, and each serves its owner
// with the spec's environment. The pool refills. The filling replica's Close leaves the pool
// to the other, which takes the role over, keeps the ready members (no orphans to it) and
// destroys a member a stopped replica left unready.
func TestPoolServices(t *testing.T) {
	c := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keyring, err := secret.LoadOrCreate(filepath.Join(dir, "keyring"))
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	spec.InitialEnv = map[string]string{"POOL_VAR": "delivered"}
	b := newBackend(t, nil)
	// Whatever the test leaves in the pool is destroyed, the sandboxes too.
	t.Cleanup(func() {
		ms, err := b.PoolMembers(context.Background())
		if err != nil {
			t.Error(err)
		}
		for _, m := range ms {
			if err := b.Destroy(context.Background(), m.Instance); err != nil {
				t.Error(err)
			}
		}
	})
	if ready := readyMembers(t, b); len(ready) > 0 {
		t.Fatalf("ready pool members before the test: %q", ready)
	}

	type replica struct {
		svc  *sandbox.Service
		stop func()
	}
	newReplica := func(name string) *replica {
		st, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.PutSpec(ctx, spec); err != nil {
			t.Fatal(err)
		}
		s := sandbox.NewService(sandbox.ServiceOptions{
			Store: st, Backend: newBackend(t, nil), Sealer: keyring, DefaultSpec: spec.ID,
			Node: name, Replica: name, StartTimeout: poolTimeout, WatchInterval: 200 * time.Millisecond,
			Pools: map[string]int{"": 2},
		})
		return &replica{svc: s, stop: func() { s.Close() }}
	}
	ra, rb := newReplica("replica-a"), newReplica("replica-b")
	defer ra.stop()
	defer rb.stop()
	var started sync.Map // sandbox id → owner
	t.Cleanup(func() {
		started.Range(func(id, _ any) bool {
			_ = b.Destroy(context.Background(), sandbox.Instance{ID: id.(string)})
			return true
		})
	})

	cold, err := rb.svc.Start(ctx, "erin", "")
	if err != nil {
		t.Fatal(err)
	}
	started.Store(cold.ID, "erin")
	if cold.Status != sandbox.StatusStarting {
		t.Fatalf("a start with the pool empty is %s, want a cold start (STARTING)", cold.Status)
	}

	for _, r := range []*replica{ra, rb} {
		if err := r.svc.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.svc.Run(rctx) }()
		stopRun := func() {
			rcancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}
		close := r.stop
		r.stop = func() { stopRun(); close() }
	}
	before := waitReady(t, ctx, b, 2)

	// Four starts at once, two on each replica, for a pool of two.
	owners := []string{"alice", "bob", "carol", "dave"}
	sbs := make([]sandbox.Sandbox, len(owners))
	errs := make([]error, len(owners))
	var wg sync.WaitGroup
	for i, owner := range owners {
		svc := []*replica{ra, rb}[i%2].svc
		wg.Add(1)
		go func() {
			defer wg.Done()
			sbs[i], errs[i] = svc.Start(ctx, owner, "")
			if errs[i] == nil {
				started.Store(sbs[i].ID, owner)
			}
		}()
	}
	wg.Wait()
	ids := map[string]string{}
	warm := 0
	for i, sb := range sbs {
		if errs[i] != nil {
			t.Fatalf("start for %s: %v", owners[i], errs[i])
		}
		if other, ok := ids[sb.ID]; ok {
			t.Fatalf("%s and %s got the same sandbox %s", other, owners[i], sb.ID)
		}
		ids[sb.ID] = owners[i]
		if sb.Status == sandbox.StatusRunning {
			warm++
			if !slices.Contains(before, sb.ID) {
				t.Errorf("%s's sandbox %s is RUNNING at once but was no ready member of the pool %q", owners[i], sb.ID, before)
			}
		}
	}
	if warm == 0 {
		t.Fatalf("no start of four claimed from a pool of two: %+v", sbs)
	}
	t.Logf("%d of %d starts claimed from the pool", warm, len(owners))
	// Any replica reaches any of them: replica-b checks them all.
	for i, sb := range append(sbs, cold) {
		owner := append(owners, "erin")[i]
		if _, err := rb.svc.WaitRunning(ctx, owner, sb.ID); err != nil {
			t.Fatalf("%s's sandbox: %v", owner, err)
		}
		rc, err := rb.svc.Client(ctx, owner, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rc.Run(ctx, runtimeclient.CommandRequest{Command: `echo "$POOL_VAR"; ls -A`})
		if err != nil || res.Output != "delivered\n" {
			t.Fatalf("%s's sandbox %s: a command printed %q (%v), want the spec's variable and an empty workspace", owner, sb.ID, res.Output, err)
		}
	}
	waitReady(t, ctx, b, 2)

	// replica-a, which fills the pool, stops; the pool stays. A replica stopped while it
	// started a member leaves it unready: replica-b, taking the role over, destroys it.
	ra.stop()
	kept := readyMembers(t, b)
	if len(kept) < 2 {
		t.Fatalf("after the filling replica's Close the pool holds %q, want it kept", kept)
	}
	// replica-b may retire it before its runtime answers (on a busy machine the pod takes
	// longer to start than the role takes to pass): then this start sees its pod end.
	leftover := sandboxtest.NewID()
	if _, _, err := tryMember(t, b, leftover, spec, members(t, b)[kept[0]].Digest); err != nil && !errors.Is(err, errPodEnded) {
		t.Fatalf("the unready member's start: %v", err)
	}
	for ctx.Err() == nil {
		_, left := members(t, b)[leftover]
		if !left && len(leftovers(t, c, leftover)) == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the other replica never destroyed the unready member the stopped one left")
	}
	now := members(t, b)
	for _, id := range kept {
		if !now[id].Ready {
			t.Errorf("ready member %s did not survive the other replica's taking over", id)
		}
	}
	for id, owner := range ids {
		if err := rb.svc.Delete(ctx, owner, id); err != nil {
			t.Errorf("delete %s's sandbox: %v", owner, err)
		}
	}
}

// readyMembers lists the ids of b's ready pool members.
func readyMembers(t *testing.T, b *Backend) []string {
	t.Helper()
	var ids []string
	for id, m := range members(t, b) {
		if m.Ready {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// waitReady waits until b's pool has n ready members and returns their ids.
func waitReady(t *testing.T, ctx context.Context, b *Backend, n int) []string {
	t.Helper()
	for {
		ids := readyMembers(t, b)
		if len(ids) >= n {
			return ids
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pool never held %d ready members (it holds %q)", n, ids)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
