package bwrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// errGone: the sandbox's processes no longer exist.
var errGone = errors.New("its processes are gone")

// Pause freezes the sandbox's cgroup and returns once the kernel reports every process in
// it frozen, including those the agent put in the background.
// The first pause or resume takes the freezer hold (FreezerHold).
func (b *Backend) Pause(ctx context.Context, inst sandbox.Instance) error {
	g, err := b.Group(inst)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	pids, err := g.PIDs()
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	if len(pids) == 0 {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, errGone)
	}
	b.holdFreezer(ctx)
	if err := g.Freeze(ctx); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// Resume thaws the sandbox's cgroup.
func (b *Backend) Resume(ctx context.Context, inst sandbox.Instance) error {
	g, err := b.Group(inst)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	b.holdFreezer(ctx)
	if err := g.Thaw(ctx); err != nil {
		if errors.Is(err, cgroup.ErrGone) {
			err = errGone
		}
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// Inspect reports gone when no process is left in the sandbox's cgroup (or the cgroup is
// gone), paused when the cgroup is frozen, running otherwise. When the runtime exits, bwrap's
// init ends the sandbox's PID namespace, so an empty cgroup follows a dead runtime at once.
func (b *Backend) Inspect(_ context.Context, inst sandbox.Instance) (sandbox.State, error) {
	g, err := b.Group(inst)
	if err != nil {
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	}
	pids, err := g.PIDs()
	if err != nil {
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	}
	if len(pids) == 0 {
		return sandbox.StateGone, nil
	}
	frozen, err := g.Frozen()
	switch {
	case errors.Is(err, cgroup.ErrGone):
		return sandbox.StateGone, nil
	case err != nil:
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	case frozen:
		return sandbox.StatePaused, nil
	}
	return sandbox.StateRunning, nil
}

// Destroy kills every process in the sandbox's cgroup, removes the cgroup and then the
// sandbox's directory. That order keeps a cgroup from outliving its directory, should agentd
// stop halfway. A sandbox that is gone already only loses what is left of it.
func (b *Backend) Destroy(ctx context.Context, inst sandbox.Instance) error {
	dir, err := b.dir(inst.ID)
	if err != nil {
		return fmt.Errorf("destroy sandbox: %w", err)
	}
	st, _, err := decodeState(inst)
	if err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	g, err := b.group(inst.ID, st)
	if err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	if err := g.Destroy(ctx); err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	reapFirst(st)
	if err := hostproc.RemoveAll(dir); err != nil {
		return fmt.Errorf("destroy sandbox %s: remove directory: %w", inst.ID, err)
	}
	b.log.Info("sandbox destroyed", "sandbox_id", inst.ID)
	return nil
}
