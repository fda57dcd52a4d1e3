package docker

import (
	"context"
	"errors"
	"fmt"
	"os"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
)

// errGone: the sandbox has no container that runs.
var errGone = errors.New("its container is gone")

// Pause freezes the container (Docker's pause: the cgroup freezer). It returns once every
// process is frozen.
func (b *Backend) Pause(ctx context.Context, inst sandbox.Instance) error {
	if err := b.setPaused(ctx, inst, true); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// Resume thaws the container.
func (b *Backend) Resume(ctx context.Context, inst sandbox.Instance) error {
	if err := b.setPaused(ctx, inst, false); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// setPaused pauses or unpauses inst's container unless it already is. The engine refuses to
// pause a paused container, so a refusal is checked against the state it leaves.
func (b *Backend) setPaused(ctx context.Context, inst sandbox.Instance, pause bool) error {
	c, err := b.find(ctx, inst)
	if err != nil {
		return err
	}
	if c == nil || !c.State.Running {
		return errGone
	}
	if c.State.Paused == pause {
		return nil
	}
	for attempt := 1; ; attempt++ {
		if pause {
			_, err = b.cli.ContainerPause(ctx, c.ID, client.ContainerPauseOptions{})
		} else {
			_, err = b.cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{})
		}
		if err == nil {
			return nil
		}
		now, ferr := b.find(ctx, inst)
		running := ferr == nil && now != nil && now.State.Running
		if running && now.State.Paused == pause {
			return nil // a concurrent call got there first
		}
		// On a busy machine runc may give up freezing the container's cgroup before every
		// task in it stopped ("unable to freeze"), and thaws it again: the container runs as
		// before, and runc leaves trying again to its caller.
		if !pause || !running || attempt == pauseAttempts || ctx.Err() != nil {
			return err
		}
		b.log.Warn("the engine did not pause the container; trying again", "sandbox_id", inst.ID, "attempt", attempt, "err", err)
	}
}

// pauseAttempts bounds the pauses asked of the engine for one Pause.
const pauseAttempts = 3

// Inspect reports paused or running from the container's state, and gone when there is no
// container or it no longer runs (it exited, or is being removed).
func (b *Backend) Inspect(ctx context.Context, inst sandbox.Instance) (sandbox.State, error) {
	c, err := b.find(ctx, inst)
	switch {
	case err != nil:
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	case c == nil || !c.State.Running:
		return sandbox.StateGone, nil
	case c.State.Paused:
		return sandbox.StatePaused, nil
	default:
		return sandbox.StateRunning, nil
	}
}

// find returns inst's container, or nil when it has none. It looks up the container id the
// instance recorded, else the container labelled with the sandbox id, and only accepts a
// container that carries this backend's labels for that sandbox.
func (b *Backend) find(ctx context.Context, inst sandbox.Instance) (*container.InspectResponse, error) {
	st, err := decodeState(inst)
	if err != nil {
		return nil, err
	}
	id := st.ContainerID
	if id == "" {
		ids, err := b.containers(ctx, inst.ID)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		id = ids[0]
	}
	res, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	c := res.Container
	if c.State == nil || c.Config == nil || !b.owns(c.Config.Labels, inst.ID) {
		return nil, nil
	}
	return &c, nil
}

// owns says whether labels mark an object of sandbox id managed by this backend.
func (b *Backend) owns(labels map[string]string, id string) bool {
	return labels[labelManaged] == "true" && labels[labelInstance] == b.instance && labels[labelSandbox] == id
}

// containers returns the ids of every container, running or not, labelled with sandbox id.
func (b *Backend) containers(ctx context.Context, id string) ([]string, error) {
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: b.filters(id)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	ids := make([]string, 0, len(res.Items))
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// Destroy removes the container (killing its processes, paused or not), the workspace volume
// and the host directory. What is already gone is skipped. It finds them by their labels, not
// by the instance's state, so it also cleans up after a start that failed half-way.
func (b *Backend) Destroy(ctx context.Context, inst sandbox.Instance) error {
	if err := b.remove(ctx, inst.ID); err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	b.log.Info("sandbox destroyed", "sandbox_id", inst.ID)
	return nil
}

// remove removes everything of sandbox id: every container and volume labelled with it, and
// its directory.
func (b *Backend) remove(ctx context.Context, id string) error {
	dir, err := b.dir(id)
	if err != nil {
		return err
	}
	ids, err := b.containers(ctx, id)
	if err != nil {
		return err
	}
	for _, cid := range ids {
		_, err := b.cli.ContainerRemove(ctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove container %.12s: %w", cid, err)
		}
	}
	vols, err := b.cli.VolumeList(ctx, client.VolumeListOptions{Filters: b.filters(id)})
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vols.Items {
		_, err := b.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove volume %s: %w", v.Name, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove directory: %w", err)
	}
	return nil
}
