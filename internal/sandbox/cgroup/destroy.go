package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// killTimeout bounds Destroy: killing every process of the group and removing it. Killed
// processes end only once they run: on a machine kept busy by others, a thousand of them (a
// fork bomb at the default PID limit) took more than 10 s to end at a sandbox's weight, which
// is why Destroy gives them more (favour).
const killTimeout = time.Minute

// Destroy kills every process of the group and removes the group from every hierarchy. A
// group that does not exist is not an error.
//
// Where the kernel has cgroup.kill (v2, Linux 5.14) one write kills the whole group.
// Otherwise the group is frozen first, so no process can fork while the list of its
// processes is read and each is sent SIGKILL; then it is thawed, because a frozen v1 task
// dies only once it runs again. The round repeats until the group is empty (a freeze that
// timed out may have let a process fork meanwhile). Killed processes that have not ended
// by the round after favourAfter are given the CPU to end (favour) until Destroy returns.
func (g *Group) Destroy(ctx context.Context) error {
	if !g.Exists() {
		return nil
	}
	deadline := time.Now().Add(killTimeout)
	var killed time.Time // the first kill
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	// favourIfSlow favours the group once favourAfter has passed since the first kill: after
	// a kill, and before the next round's, whose freeze may wait for the dying processes.
	favourIfSlow := func() {
		if release == nil && !killed.IsZero() && time.Since(killed) >= g.layout.favourAfter {
			release = g.favour()
		}
	}
	for {
		pids, err := g.PIDs()
		if err != nil {
			return fmt.Errorf("destroy cgroup %s: %w", g.rel, err)
		}
		if len(pids) == 0 {
			break
		}
		favourIfSlow()
		if err := g.killAll(ctx); err != nil {
			return fmt.Errorf("destroy cgroup %s: %w", g.rel, err)
		}
		if killed.IsZero() {
			killed = time.Now()
		}
		favourIfSlow()
		err = poll(ctx, 100*time.Millisecond, func() (bool, error) {
			pids, err := g.PIDs()
			return len(pids) == 0, err
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("destroy cgroup %s: %w", g.rel, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("destroy cgroup %s: processes still there %v after SIGKILL", g.rel, killTimeout)
		}
	}
	for _, h := range g.layout.hierarchies() {
		d := g.dir(h)
		// A task that has just been reported gone can hold the group a moment longer.
		err := poll(ctx, time.Until(deadline), func() (bool, error) {
			err := os.Remove(d)
			switch {
			case err == nil || errors.Is(err, os.ErrNotExist):
				return true, nil
			case errors.Is(err, syscall.EBUSY):
				return false, nil
			}
			return false, err
		})
		if err != nil {
			return fmt.Errorf("destroy cgroup %s: remove %s: %w", g.rel, d, err)
		}
	}
	return nil
}

// favourAfter is how long killed processes may take to end before Destroy favours their
// group. An idle sandbox's end 15 to 35 ms after the kill on a quiet machine, so its delete
// leaves the weights as they are; beside stress-ng --cpu 8 they took 130 to 300 ms, and
// were favoured.
const favourAfter = 100 * time.Millisecond

// killAll sends SIGKILL to every process of the group, once.
func (g *Group) killAll(ctx context.Context) error {
	if h := g.layout.byCtrl[Freezer]; h.v2 {
		kill := filepath.Join(g.dir(h), "cgroup.kill")
		if _, err := os.Stat(kill); err == nil {
			return gone(writeFile(kill, "1"))
		}
	}
	// A freeze that fails (a task that cannot be frozen) still stops the others; carry on
	// and let the next round catch what it missed.
	_ = g.Freeze(ctx)
	pids, err := g.PIDs()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill process %d: %w", pid, err)
		}
	}
	if err := g.setFrozen(false); err != nil && !errors.Is(err, ErrGone) {
		return err
	}
	return nil
}
