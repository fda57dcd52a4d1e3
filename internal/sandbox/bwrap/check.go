package bwrap

import (
	"context"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/firewall"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

var _ sandbox.Checker = (*Backend)(nil)

// Check reports whether sandboxes can start: the sandbox directory takes new files, the
// agentd binary, bubblewrap and the shell are still there, the cgroup hierarchies are still
// mounted, and the firewall rules of the egress network are still in place. It starts nothing; Probe is the thorough check made once at start-up.
func (b *Backend) Check(context.Context) error {
	if err := b.root.Check(Name, b.binary); err != nil {
		return err
	}
	for _, f := range []struct{ path, what string }{
		{b.bwrap, "the bubblewrap executable is missing"},
		{shell, "the shell that starts sandboxes is missing"},
	} {
		if err := hostproc.CheckExecutable(f.path); err != nil {
			return &sandbox.CheckError{Backend: Name, Problem: f.what, Err: err}
		}
	}
	if err := b.cg.Check(); err != nil {
		return &sandbox.CheckError{Backend: Name, Problem: "a cgroup hierarchy is no longer mounted", Err: err}
	}
	if b.egressErr == nil {
		if err := firewall.Check(b.uid); err != nil {
			return &sandbox.CheckError{Backend: Name, Problem: "the firewall rules that keep egress sandboxes off the host are gone (restart agentd to add them again)", Err: err}
		}
	}
	return nil
}
