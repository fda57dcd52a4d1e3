package process

import (
	"context"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

var _ sandbox.Checker = (*Backend)(nil)

// Check reports whether sandboxes can start: the sandbox directory takes new files and the
// agentd binary is still there to run.
func (b *Backend) Check(context.Context) error {
	if err := b.root.CheckWritable(); err != nil {
		return &sandbox.CheckError{Backend: Name, Problem: "the sandbox directory is not writable", Err: err}
	}
	if err := hostproc.CheckExecutable(b.binary); err != nil {
		return &sandbox.CheckError{Backend: Name, Problem: "the agentd binary the sandboxes run is missing", Err: err}
	}
	return nil
}
