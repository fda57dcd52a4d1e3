package bwrap

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
)

// client returns a client of the sandbox's runtime once it answers.
func client(t *testing.T, inst sandbox.Instance, key string) *runtime.Client {
	t.Helper()
	c, err := runtime.NewClient(inst.Endpoint, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Identity(ctx)
		cancel()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime did not answer: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runIn(t *testing.T, c *runtime.Client, command string) runtime.CommandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Run(ctx, runtime.CommandRequest{Command: command})
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}
