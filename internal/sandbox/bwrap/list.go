package bwrap

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/agentd/agentd/internal/sandbox"
)

// List returns a sandbox for every directory under Root and every cgroup under the
// backend's cgroup parent (one left by a start or probe that was cut short has no
// directory). Their Workspace is empty: the spec that set it is not known here.
func (b *Backend) List(_ context.Context) ([]sandbox.Instance, error) {
	entries, err := os.ReadDir(b.root.Path)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ids, err := b.cg.Children(b.cgParent)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(ids, e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	var out []sandbox.Instance
	for _, id := range ids {
		dir, err := b.dir(id)
		if err != nil {
			continue
		}
		out = append(out, sandbox.Instance{
			ID:            id,
			Endpoint:      "unix:" + hostSocket(dir),
			HostWorkspace: hostWorkspace(dir),
			State:         instanceState{Cgroup: b.cgParent + "/" + id}.encode(),
		})
	}
	return out, nil
}
