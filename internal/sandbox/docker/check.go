package docker

import (
	"context"

	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
)

var _ sandbox.Checker = (*Backend)(nil)

// Check reports whether sandboxes can start: the sandbox directory takes new files, the
// agentd binary is still there and the engine answers a ping.
func (b *Backend) Check(ctx context.Context) error {
	if err := b.root.Check(Name, b.binary); err != nil {
		return err
	}
	if _, err := b.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return &sandbox.CheckError{Backend: Name, Problem: "the Docker engine does not answer", Err: err}
	}
	return nil
}
