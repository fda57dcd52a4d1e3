package docker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
)

// List returns every sandbox of this backend found on the engine or under Root: containers
// and volumes carrying its labels, and sandbox directories. Where a container exists, State
// records it; Workspace is known only from a container's volume mount.
func (b *Backend) List(ctx context.Context) ([]sandbox.Instance, error) {
	containers, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: b.filters("")})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: list containers: %w", err)
	}
	vols, err := b.cli.VolumeList(ctx, client.VolumeListOptions{Filters: b.filters("")})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: list volumes: %w", err)
	}
	entries, err := os.ReadDir(b.root.Path)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}

	found := map[string]*sandbox.Instance{}
	add := func(id string) *sandbox.Instance {
		dir, err := b.dir(id)
		if err != nil {
			return nil
		}
		inst, ok := found[id]
		if !ok {
			inst = &sandbox.Instance{ID: id, Endpoint: endpoint(dir)}
			found[id] = inst
		}
		return inst
	}
	for _, c := range containers.Items {
		id := c.Labels[labelSandbox]
		inst := add(id)
		if inst == nil {
			continue
		}
		inst.State = instanceState{ContainerID: c.ID}.encode()
		for _, m := range c.Mounts {
			if m.Type == mount.TypeVolume && m.Name == volumeName(id) {
				inst.Workspace = m.Destination
			}
		}
	}
	for _, v := range vols.Items {
		add(v.Labels[labelSandbox])
	}
	for _, e := range entries {
		if e.IsDir() {
			add(e.Name())
		}
	}
	out := make([]sandbox.Instance, 0, len(found))
	for _, inst := range found {
		out = append(out, *inst)
	}
	slices.SortFunc(out, func(a, b sandbox.Instance) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
