package docker

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// readyWait bounds the waits for a runtime to answer: generous, for a busy machine.
const readyWait = time.Minute

func sleep(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

// TestServiceReconcile is a restart of agentd serve on the docker backend: a new service and
// backend over the same store and root adopt the live sandbox (which still works), mark the one
// whose container died MISSING, and remove the orphan that has agentd's labels and no record,
// but leave alone the sandbox of another agentd (another root) on the same engine.
func TestServiceReconcile(t *testing.T) {
	d := needEngine(t)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sandboxes")
	store := sandboxtest.NewMemStore()
	spec := testSpec()
	spec.ID = "default"
	if err := store.PutSpec(ctx, spec); err != nil {
		t.Fatal(err)
	}
	newService := func(b sandbox.Backend) *sandbox.Service {
		s := sandbox.NewService(sandbox.ServiceOptions{
			Store: store, Backend: b, Sealer: sandboxtest.Sealer{}, Logger: slog.New(slog.DiscardHandler),
			DefaultSpec: "default", StartTimeout: readyWait,
		})
		t.Cleanup(func() { s.Close() })
		return s
	}
	startRunning := func(s *sandbox.Service) sandbox.Sandbox {
		t.Helper()
		sb, err := s.Start(ctx, "alice", "")
		if err == nil {
			sb, err = s.WaitRunning(ctx, "alice", sb.ID)
		}
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return sb
	}

	// The test closes the backends that start sandboxes; this one stays open to destroy at
	// cleanup whatever a failure leaves.
	sandboxtest.DestroyAllAtCleanup(t, newBackend(t, d, root))
	oldBackend := newBackend(t, d, root)
	old := newService(oldBackend)
	live, died := startRunning(old), startRunning(old)
	orphan := sandboxtest.StartSandbox(t, oldBackend, sandbox.StartRequest{ID: sandboxtest.NewID(), OwnerID: "alice", Spec: spec, SessionKey: "k"})
	neighbour := newBackend(t, d, filepath.Join(t.TempDir(), "sandboxes"))
	foreign := sandboxtest.StartSandbox(t, neighbour, sandbox.StartRequest{ID: sandboxtest.NewID(), OwnerID: "bob", Spec: spec, SessionKey: "k"})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if err := oldBackend.Close(); err != nil {
		t.Fatal(err)
	}
	diedState, err := decodeState(died.Instance)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.ContainerKill(ctx, diedState.ContainerID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}

	b := newBackend(t, d, root)
	s := newService(b)
	if err := s.Reconcile(ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if got, err := s.Get(ctx, "alice", live.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Errorf("live sandbox after reconcile: %s, %v", got.Status, err)
	}
	if got, err := s.Get(ctx, "alice", died.ID); err != nil || got.Status != sandbox.StatusMissing {
		t.Errorf("sandbox whose container died, after reconcile: %s, %v", got.Status, err)
	}
	if left := d.Leftovers(ctx, labelSandbox, orphan.ID); len(left) > 0 {
		t.Errorf("orphan left after reconcile: %q", left)
	}
	if st, err := neighbour.Inspect(ctx, foreign); err != nil || st != sandbox.StateRunning {
		t.Errorf("another agentd's sandbox after reconcile: %s, %v", st, err)
	}
	if st, err := b.Inspect(ctx, foreign); err != nil || st != sandbox.StateGone {
		t.Errorf("this backend inspects another agentd's sandbox as %s, %v; want gone", st, err)
	}

	c, err := s.Client(ctx, "alice", live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo adopted"}); err != nil || res.Output != "adopted\n" {
		t.Fatalf("run in the adopted sandbox: %+v, %v", res, err)
	}
	for _, sb := range []sandbox.Sandbox{live, died} {
		if err := s.Delete(ctx, "alice", sb.ID); err != nil {
			t.Fatalf("delete %s: %v", sb.ID, err)
		}
		if left := d.Leftovers(ctx, labelSandbox, sb.ID); len(left) > 0 {
			t.Errorf("left after delete: %q", left)
		}
	}
}
