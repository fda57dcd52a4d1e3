package kubernetes

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestReachPortForward: a backend that reaches runtimes through the API server's port
// forwarding never dials a pod's address, and its clients run commands and open the git
// channel, over the pinned TLS, before and after a pause.
func TestReachPortForward(t *testing.T) {
	b := newBackend(t, func(o *Options) {
		o.Reach = ReachPortForward
		o.DialContext = func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("a pod's address was dialed")
		}
	})
	key := sandboxtest.NewKey()
	inst := startSandboxKey(t, b, key)
	rc := client(t, b, inst, key)
	run := func(command string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := rc.Run(ctx, runtimeclient.CommandRequest{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		return res.Output
	}
	if got := run("echo forwarded > f && cat f"); got != "forwarded\n" {
		t.Fatalf("a command through port forwarding: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, addr, err := rc.OpenGitChannel(ctx)
	if err != nil {
		t.Fatalf("git channel through port forwarding: %v", err)
	}
	conn.Close()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("git channel address %q", addr)
	}
	if err := b.Pause(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := b.Resume(ctx, inst); err != nil {
		t.Fatal(err)
	}
	rc = client(t, b, inst, key)
	if got := run("cat f"); got != "forwarded\n" {
		t.Fatalf("the workspace after a pause, through port forwarding: %q", got)
	}
}

// TestReachPinned: a client pinned to another sandbox's key reaches nothing at this
// sandbox's pod, by its IP or by port forwarding; pinned to its own, it does.
func TestReachPinned(t *testing.T) {
	for _, reach := range []string{ReachIP, ReachPortForward} {
		t.Run(reach, func(t *testing.T) {
			b := newBackend(t, func(o *Options) { o.Reach = reach })
			key := sandboxtest.NewKey()
			inst := startSandboxKey(t, b, key)
			client(t, b, inst, key) // answers

			st, err := decodeState(inst)
			if err != nil {
				t.Fatal(err)
			}
			_, _, otherPin, err := runtimeCert("other", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			st.Pin = otherPin
			forged := inst
			forged.State = st.encode()
			rc, err := sandboxtest.NewClient(b, forged, key)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := rc.Identity(ctx); err == nil || !strings.Contains(err.Error(), "not the sandbox's") {
				t.Fatalf("a client pinned to another key: %v, want the pin refused", err)
			}
		})
	}
}

func startSandboxKey(t *testing.T, b *Backend, key string) sandbox.Instance {
	t.Helper()
	id := sandboxtest.NewID()
	t.Cleanup(func() {
		if err := b.Destroy(context.Background(), sandbox.Instance{ID: id}); err != nil {
			t.Errorf("destroy %s: %v", id, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: id, OwnerID: "owner", Spec: testSpec(), SessionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}
