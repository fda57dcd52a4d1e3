package bwrap

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// client returns a client of the sandbox's runtime once it answers.
func client(t *testing.T, inst sandbox.Instance, key string) *runtimeclient.Client {
	t.Helper()
	c, err := runtimeclient.NewClient(inst.Endpoint, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	const bound = time.Minute
	deadline := time.Now().Add(bound)
	for {
		// Each attempt may take what is left of the wait: on a busy machine an answer can
		// take seconds.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_, err := c.Identity(ctx)
		cancel()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime did not answer within %v; last error: %v", bound, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runIn(t *testing.T, c *runtimeclient.Client, command string) runtimeclient.CommandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: command})
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}
