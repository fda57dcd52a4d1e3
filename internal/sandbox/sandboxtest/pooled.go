package sandboxtest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// testPooled, for a backend with Capabilities.Pool: a sandbox started for a warm pool holds
// no key and answers nothing but its probes and one delivery authenticated by its pool's
// secret; once claimed (delivered to), it serves its owner's key and environment only, and
// the isolation and escape checks hold on claimed sandboxes as on cold ones.
func (s *suite) testPooled(t *testing.T) {
	b := s.newBackend(t)
	if !b.Capabilities().Pool {
		t.Skip("the backend keeps no warm pools (Capabilities.Pool)")
	}
	t.Run("Delivery", s.testDelivery)
	cs := *s
	cs.claimed = true
	t.Run("RuntimeEnvironment", cs.testRuntimeEnvironment)
	t.Run("Workspace", cs.testWorkspace)
	t.Run("Isolation", cs.testIsolation)
	t.Run("Escape", cs.testEscape)
}

// testDelivery: what a pooled runtime answers before and after its delivery.
func (s *suite) testDelivery(t *testing.T) {
	b := s.newBackend(t)
	spec := s.spec()
	if spec.InitialEnv == nil {
		spec.InitialEnv = map[string]string{}
	}
	spec.InitialEnv["AGENTD_TEST_DELIVERED"] = "yes"
	secret, key := NewKey(), NewKey()
	id := NewID()
	t.Cleanup(func() {
		if err := b.Destroy(context.Background(), sandbox.Instance{ID: id}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	inst, err := b.Start(context.Background(), sandbox.StartRequest{ID: id, Spec: sandbox.PoolSpec(spec), PoolSecret: secret, Pool: spec.ID})
	if err != nil {
		t.Fatalf("pooled start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Destroy(context.Background(), inst); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	pool := client(t, b, inst, secret)
	waitAlive(t, pool)
	unauthorized := func(what string, err error) {
		t.Helper()
		var se *runtimeclient.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %v, want 401", what, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	_, err = pool.Identity(ctx)
	unauthorized("identity with the pool secret", err)
	_, err = pool.Run(ctx, runtimeclient.CommandRequest{Command: "true"})
	unauthorized("a command before the delivery", err)
	_, err = client(t, b, inst, NewKey()).Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: key})
	unauthorized("a delivery with another secret", err)

	claim(t, b, inst, secret, key, spec.InitialEnv)
	c := client(t, b, inst, key)
	res := run(t, c, `echo "$AGENTD_TEST_DELIVERED"; ls -A`)
	if res.Output != "yes\n" {
		t.Fatalf("after the delivery a command printed %q, want the delivered variable and an empty workspace", res.Output)
	}
	_, err = pool.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: NewKey()})
	unauthorized("a second delivery", err)
	_, err = pool.Identity(ctx)
	unauthorized("the pool secret after the delivery", err)
}

// claim delivers key and env to the pooled sandbox inst, as the sandbox service's claim does.
func claim(t *testing.T, b sandbox.Backend, inst sandbox.Instance, secret, key string, env map[string]string) {
	t.Helper()
	c := client(t, b, inst, secret)
	waitAlive(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	id, err := c.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: key, Env: env})
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	if id.SandboxID != inst.ID {
		t.Fatalf("the delivered runtime serves %q, want %q", id.SandboxID, inst.ID)
	}
}

func client(t *testing.T, b sandbox.Backend, inst sandbox.Instance, key string) *runtimeclient.Client {
	t.Helper()
	c, err := NewClient(b, inst, key)
	if err != nil {
		t.Fatalf("client for %q: %v", inst.Endpoint, err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// waitAlive waits until the runtime answers its liveness probe, all a pooled one answers.
func waitAlive(t *testing.T, c *runtimeclient.Client) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := c.Alive(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pooled runtime did not answer within %v; last error: %v", readyTimeout, err)
		}
		time.Sleep(delay)
	}
}
