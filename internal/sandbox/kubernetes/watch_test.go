package kubernetes

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// statusChanges returns an OnStatus for a service and a function that waits until sandbox id
// has gone to status to, failing the test when ctx ends first.
func statusChanges(t *testing.T) (func(context.Context, sandbox.Sandbox, sandbox.Status), func(ctx context.Context, id string, to sandbox.Status) sandbox.Sandbox) {
	ch := make(chan sandbox.Sandbox, 100)
	on := func(_ context.Context, sb sandbox.Sandbox, _ sandbox.Status) { ch <- sb }
	wait := func(ctx context.Context, id string, to sandbox.Status) sandbox.Sandbox {
		t.Helper()
		for {
			select {
			case sb := <-ch:
				if sb.ID == id && sb.Status == to {
					return sb
				}
			case <-ctx.Done():
				t.Fatalf("sandbox %s never became %s: %v", id, to, context.Cause(ctx))
			}
		}
	}
	return on, wait
}

// TestWatchVanished: with a watcher whose passes never come (an hour apart), a sandbox whose
// pod is removed behind agentd's back, and one whose pod fails, become MISSING as the
// cluster's watch tells of it; a sandbox paused meanwhile, whose pod went too, stays PAUSED.
func TestWatchVanished(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, nil)
	store := sandboxtest.NewMemStore()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := store.PutSpec(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	onStatus, waitStatus := statusChanges(t)
	s := sandbox.NewService(sandbox.ServiceOptions{
		Store: store, Backend: b, Sealer: sandboxtest.Sealer{},
		DefaultSpec: testSpec().ID, Node: "replica-a", StartTimeout: 5 * time.Minute,
		WatchInterval: time.Hour, OnStatus: onStatus,
	})
	defer s.Close()
	if err := s.Reconcile(ctx); err != nil { // takes the role of watching
		t.Fatal(err)
	}
	go s.Run(ctx)

	start := func() sandbox.Sandbox {
		t.Helper()
		sb, err := s.Start(ctx, "alice", "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Destroy(context.Background(), sandbox.Instance{ID: sb.ID}) })
		if sb, err = s.WaitRunning(ctx, "alice", sb.ID); err != nil {
			t.Fatal(err)
		}
		return sb
	}
	paused, removed, failed := start(), start(), start()

	if err := s.Pause(ctx, "alice", paused.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods(testNamespace).Delete(ctx, objectName(removed.ID), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if sb := waitStatus(ctx, removed.ID, sandbox.StatusMissing); sb.Detail == "" {
		t.Errorf("the removed pod's sandbox is MISSING without a detail")
	}
	// A deadline the kubelet enforces: the pod fails (DeadlineExceeded), as a pod evicted or
	// whose sandbox ended does.
	if _, err := c.Client.CoreV1().Pods(testNamespace).Patch(ctx, objectName(failed.ID), types.StrategicMergePatchType,
		[]byte(`{"spec":{"activeDeadlineSeconds":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, failed.ID, sandbox.StatusMissing)
	// The pause's news came before the others': it was checked, and left alone.
	if got, _ := s.Get(ctx, "alice", paused.ID); got.Status != sandbox.StatusPaused {
		t.Fatalf("the paused sandbox is %s %s", got.Status, got.Detail)
	}
	if err := s.Resume(ctx, "alice", paused.ID); err != nil {
		t.Fatalf("resume after the others vanished: %v", err)
	}
}

// TestWatchSurvivesAPIServerRestart: the backend's informers ride out the API server's
// restart (their watches break and are taken up again): a pod removed after it is still told
// of, the backend's view finds the sandbox gone, and a new sandbox starts.
func TestWatchSurvivesAPIServerRestart(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	inst := startSandbox(t, b, "alice", testSpec())
	told := make(chan string, 100)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go b.WatchChanges(wctx, func(id string) { told <- id })
	if st, err := b.Inspect(ctx, inst); err != nil || st != sandbox.StateRunning {
		t.Fatalf("inspect before the restart: %v %v", st, err)
	}

	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods(testNamespace).Delete(ctx, objectName(inst.ID), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	for id := ""; id != inst.ID; {
		select {
		case id = <-told:
		case <-ctx.Done():
			t.Fatalf("the pod's removal after the API server's restart was never told: %v", context.Cause(ctx))
		}
	}
	if st, err := b.Inspect(ctx, inst); err != nil || st != sandbox.StateGone {
		t.Fatalf("inspect of the sandbox whose pod was removed: %v %v", st, err)
	}
	startSandbox(t, b, "alice", testSpec())
}

// countingTransport counts the requests made through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestReadsFromView: once the informers have listed the namespace, Inspect, List and the
// pod lookup of a connection make no call to the API server, whatever the sandboxes' state.
func TestReadsFromView(t *testing.T) {
	c := needCluster(t)
	var calls atomic.Int64
	b := newBackend(t, func(o *Options) {
		cfg := rest.CopyConfig(c.Config)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &calls} }
		o.Config = cfg
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	running := startSandbox(t, b, "alice", testSpec())
	paused := startSandbox(t, b, "alice", testSpec())
	if err := b.Pause(ctx, paused); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	for range 10 {
		if st, err := b.Inspect(ctx, running); err != nil || st != sandbox.StateRunning {
			t.Fatalf("inspect the running sandbox: %v %v", st, err)
		}
		if st, err := b.Inspect(ctx, paused); err != nil || st != sandbox.StatePaused {
			t.Fatalf("inspect the paused sandbox: %v %v", st, err)
		}
		insts, err := b.List(ctx)
		if err != nil || len(insts) < 2 {
			t.Fatalf("list: %v %v", insts, err)
		}
		if _, err := b.runningPod(ctx, testNamespace, running.ID); err != nil {
			t.Fatalf("the running sandbox's pod: %v", err)
		}
	}
	if n := calls.Load() - before; n != 0 {
		t.Fatalf("%d calls to the API server for 10 rounds of reads, want none", n)
	}
}
