package kubernetes

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestOrphans: a sandbox labelled with the installation but unknown to the store is left
// alone for the orphan grace, then removed by the replica that reconciles; a sandbox being
// started (its record STARTING, the backend not yet answered) is kept, and only once its
// start is older than the grace and the start timeout is its record dropped and the sandbox
// removed as an orphan after a grace of its own.
func TestOrphans(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, nil)
	store := sandboxtest.NewMemStore()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	clock := &testClock{now: time.Now()}
	const grace, startTimeout = time.Minute, 5 * time.Minute
	s := sandbox.NewService(sandbox.ServiceOptions{
		Store: store, Backend: b, Sealer: sandboxtest.Sealer{}, Now: clock.Now,
		Node: "replica-a", StartTimeout: startTimeout, OrphanGrace: grace,
	})
	defer s.Close()

	orphan := startSandbox(t, b, "alice", testSpec())
	starting := sandbox.Sandbox{ID: sandboxtest.NewID(), OwnerID: "alice", SpecID: testSpec().ID, Backend: Name,
		Node: "replica-b", Status: sandbox.StatusStarting, CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
	if err := store.CreateSandbox(ctx, starting, 0); err != nil {
		t.Fatal(err)
	}
	inflight, err := b.Start(ctx, sandbox.StartRequest{ID: starting.ID, OwnerID: "alice", Spec: testSpec(), SessionKey: sandboxtest.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), inflight) })
	there := func(id string) bool {
		t.Helper()
		_, err := c.Client.CoreV1().Secrets(testNamespace).Get(ctx, objectName(id), metav1.GetOptions{})
		return err == nil
	}
	pass := func() {
		t.Helper()
		if err := s.Watch(ctx); err != nil {
			t.Fatal(err)
		}
	}

	if err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	pass()
	if !there(orphan.ID) || !there(inflight.ID) {
		t.Fatalf("removed within the grace: the orphan %v, the sandbox being started %v", !there(orphan.ID), !there(inflight.ID))
	}
	clock.Advance(grace)
	pass()
	if there(orphan.ID) {
		t.Fatal("the orphan is there after its grace")
	}
	if left := leftovers(t, c, orphan.ID); len(left) > 0 {
		t.Fatalf("left of the orphan: %q", left)
	}
	if !there(inflight.ID) {
		t.Fatal("the sandbox being started was removed")
	}
	if _, err := store.GetSandbox(ctx, "", starting.ID); err != nil {
		t.Fatalf("the record of the sandbox being started: %v", err)
	}

	clock.Advance(startTimeout)
	pass() // the start is abandoned: its record goes, and its sandbox is an orphan from now
	if _, err := store.GetSandbox(ctx, "", starting.ID); err == nil {
		t.Fatal("the record of an abandoned start is kept")
	}
	pass()
	if !there(inflight.ID) {
		t.Fatal("the abandoned start's sandbox was removed before its own grace")
	}
	clock.Advance(grace)
	pass()
	if there(inflight.ID) {
		t.Fatal("the abandoned start's sandbox is there after its grace")
	}
}
