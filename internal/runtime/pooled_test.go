package runtime

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// TestMainPooled: a pooled runtime answers nothing but the probes and one delivery carrying
// its pool's secret; after the delivery it serves with the delivered key and environment,
// and refuses the secret and any other delivery.
func TestMainPooled(t *testing.T) {
	t.Setenv(runtimeclient.KeyEnv, "pool-secret")
	t.Setenv("FROM_BASE", "base")
	dir := t.TempDir()
	sock := filepath.Join(dir, "rt.sock")
	ws := filepath.Join(dir, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"--listen", "unix:" + sock, "--workspace", ws, "--sandbox-id", "sb1", "--pooled"}, os.Getenv, stderr)
	}()
	client := func(key string) *runtimeclient.Client {
		c, err := runtimeclient.NewClient("unix:"+sock, key)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pool := client("pool-secret")
	deadline := time.Now().Add(30 * time.Second)
	for pool.Alive(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("runtime never answered; log:\n%s", stderr)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Fatalf("pooled runtime made no workspace: %v", err)
	}
	unauthorized := func(what string, err error) {
		t.Helper()
		var se *runtimeclient.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %v, want 401", what, err)
		}
	}
	_, err := pool.Identity(ctx)
	unauthorized("identity with the pool secret before the delivery", err)
	_, err = pool.Run(ctx, runtimeclient.CommandRequest{Command: "true"})
	unauthorized("command with the pool secret", err)
	_, err = client("wrong").Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: "k"})
	unauthorized("delivery with a wrong secret", err)
	_, err = client("").Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: "k"})
	unauthorized("delivery with no secret", err)

	// Two deliveries at once: exactly one is taken.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for _, k := range []string{"session-a", "session-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := pool.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: k, Env: map[string]string{"OWNER_VAR": k}})
			if err == nil {
				if id.SandboxID != "sb1" || id.Workspace != ws {
					t.Errorf("delivery answered %+v", id)
				}
				mu.Lock()
				won = append(won, k)
				mu.Unlock()
				return
			}
			unauthorized("the losing delivery", err)
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("deliveries taken: %q, want one", won)
	}
	key := won[0]
	c := client(key)
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: `echo "$OWNER_VAR:$FROM_BASE:${` + runtimeclient.KeyEnv + `:-none}"`})
	if err != nil || res.Output != key+":base:none\n" {
		t.Fatalf("command after the delivery: %+v, %v", res, err)
	}
	_, err = pool.Identity(ctx)
	unauthorized("the pool secret after the delivery", err)
	_, err = pool.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: "again"})
	unauthorized("a second delivery", err)
	var se *runtimeclient.StatusError
	if _, err := c.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: "again"}); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Fatalf("a delivery with the session key: %v, want 404 (a delivered runtime serves none)", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Main did not stop within 30s of the cancel")
	}
	if strings.Contains(stderr.String(), "pool-secret") || strings.Contains(stderr.String(), key) {
		t.Fatal("a secret was logged")
	}
}

func TestDeliveredEnv(t *testing.T) {
	base := []string{"PATH=/bin", "A=1"}
	env, err := deliveredEnv(base, runtimeclient.DeliverRequest{SessionKey: "k", Env: map[string]string{"A": "2", "B": "3", runtimeclient.KeyEnv: "x"}})
	if err != nil || strings.Join(env, " ") != "PATH=/bin A=2 B=3" {
		t.Fatalf("env %q, %v", env, err)
	}
	for _, bad := range []runtimeclient.DeliverRequest{
		{},
		{SessionKey: " "},
		{SessionKey: "k", Env: map[string]string{"A=B": "1"}},
		{SessionKey: "k", Env: map[string]string{"": "1"}},
		{SessionKey: "k", Env: map[string]string{"A": "\x00"}},
	} {
		if _, err := deliveredEnv(base, bad); err == nil {
			t.Fatalf("deliveredEnv(%+v) took it", bad)
		}
	}
}
