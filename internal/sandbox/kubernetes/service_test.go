package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestService: the sandbox service runs the backend as the server does: a start becomes
// RUNNING once the runtime answers through the backend's transport, a pause makes it PAUSED
// (its pod gone), a resume RUNNING again with its workspace, the watcher leaves both alone,
// and a delete leaves nothing.
func TestService(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, nil)
	store := sandboxtest.NewMemStore()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := store.PutSpec(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	s := sandbox.NewService(sandbox.ServiceOptions{
		Store: store, Backend: b, Sealer: sandboxtest.Sealer{},
		DefaultSpec: testSpec().ID, Node: "replica-a", StartTimeout: 5 * time.Minute,
	})
	defer s.Close()
	sb, err := s.Start(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), sandbox.Instance{ID: sb.ID}) })
	if sb, err = s.WaitRunning(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	run := func(command string) string {
		t.Helper()
		rc, err := s.Client(ctx, "alice", sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rc.Run(ctx, runtimeclient.CommandRequest{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		return res.Output
	}
	if got := run("echo kept > kept && cat kept"); got != "kept\n" {
		t.Fatalf("a command: %q", got)
	}

	if err := s.Pause(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "alice", sb.ID); got.Status != sandbox.StatusPaused {
		t.Fatalf("after a pause and a watch: %s %s", got.Status, got.Detail)
	}
	if _, err := c.Client.CoreV1().Pods(testNamespace).Get(ctx, objectName(sb.ID), metav1.GetOptions{}); err == nil {
		t.Fatal("the pod of a paused sandbox is there")
	}
	if err := s.Resume(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "alice", sb.ID); got.Status != sandbox.StatusRunning {
		t.Fatalf("after a resume and a watch: %s %s", got.Status, got.Detail)
	}
	if got := run("cat kept"); got != "kept\n" {
		t.Fatalf("the workspace after a resume: %q", got)
	}
	if err := s.Delete(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, c, sb.ID); len(left) > 0 {
		t.Fatalf("left after delete: %q", left)
	}
}
