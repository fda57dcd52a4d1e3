package sandbox_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
)

// TestServiceNodes: two servers of one store on two nodes (of one machine here, each with a
// backend of its own, as two data directories would be): each records its node on what it
// starts, and neither touches the other's sandboxes. Reconcile and the watcher leave a
// sandbox of the other node alone even though its processes are nowhere to be found here;
// pausing, resuming, deleting or reaching it is refused with a *NodeError naming its node; a
// record from before nodes is adopted by the first to reconcile.
func TestServiceNodes(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	onA := func(o *sandbox.ServiceOptions) { o.Node, o.WatchInterval = "node-a", 10*time.Millisecond }
	onB := func(o *sandbox.ServiceOptions) { o.Node = "node-b" }
	a := e.service(e.backend(), onA)
	sbA := startRunning(t, a, "alice")
	if sbA.Node != "node-a" {
		t.Fatalf("node recorded: %q", sbA.Node)
	}
	legacy, err := e.store.GetSandbox(ctx, "", sbA.ID)
	must(t, err)
	legacy.ID, legacy.Node = "00000000000000000000000000000042", ""
	must(t, e.store.CreateSandbox(ctx, legacy, 0))

	// node-b's server sees none of node-a's processes: its backend has another root.
	e2 := newEnv(t)
	e2.store = e.store
	b := e2.service(e2.backend(), onB)
	must(t, b.Reconcile(ctx))
	must(t, b.Watch(ctx))
	if got, err := b.Get(ctx, "alice", sbA.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("node-a's sandbox after node-b reconciled and watched: %+v, %v", got, err)
	}
	if got, _ := b.Get(ctx, "alice", legacy.ID); got.Node != "node-b" {
		t.Fatalf("a record from before nodes was not adopted: node %q", got.Node)
	}
	for name, op := range map[string]func() error{
		"pause":  func() error { return b.Pause(ctx, "alice", sbA.ID) },
		"delete": func() error { return b.Delete(ctx, "alice", sbA.ID) },
		"client": func() error { _, err := b.Client(ctx, "alice", sbA.ID); return err },
	} {
		err := op()
		var ne *sandbox.NodeError
		if !errors.Is(err, sandbox.ErrOtherNode) || !errors.As(err, &ne) || ne.Node != "node-a" || ne.Here != "node-b" {
			t.Errorf("%s of node-a's sandbox on node-b: %v", name, err)
		}
	}
	must(t, a.Pause(ctx, "alice", sbA.ID))
	if err := b.Resume(ctx, "alice", sbA.ID); !errors.Is(err, sandbox.ErrOtherNode) {
		t.Errorf("resume of node-a's sandbox on node-b: %v", err)
	}
	must(t, a.Resume(ctx, "alice", sbA.ID))

	// node-a's own watcher still does its work on its sandbox.
	go func() { _ = a.Run(ctx) }()
	must(t, syscall.Kill(runtimePID(t, sbA), syscall.SIGKILL))
	waitFor(t, "node-a's watcher to mark its sandbox MISSING", func() bool {
		got, err := a.Get(ctx, "alice", sbA.ID)
		return err == nil && got.Status == sandbox.StatusMissing
	})
	if got, _ := a.Get(ctx, "alice", legacy.ID); got.Status != sandbox.StatusRunning {
		t.Errorf("node-a's watcher touched node-b's sandbox: %s", got.Status)
	}
}
