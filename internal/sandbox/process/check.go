package process

import (
	"context"

	"github.com/agentd/agentd/internal/sandbox"
)

var _ sandbox.Checker = (*Backend)(nil)

// Check reports whether sandboxes can start: the sandbox directory takes new files and the
// agentd binary is still there to run.
func (b *Backend) Check(context.Context) error { return b.root.Check(Name, b.binary) }
