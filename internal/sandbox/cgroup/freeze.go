package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// settleTimeout bounds the wait for the kernel to report a group frozen or thawed. A task
// stuck in an uninterruptible sleep (a hung NFS read, say) can hold a freeze up that long.
const settleTimeout = 5 * time.Second

// ErrGone: the group does not exist.
var ErrGone = errors.New("cgroup does not exist")

// Freeze stops every process of the group and returns once the kernel reports them all
// frozen. Frozen processes cannot run, fork or be traced; new processes cannot be born
// into the group. Freezing a frozen group is a no-op.
func (g *Group) Freeze(ctx context.Context) error {
	if err := g.setFrozen(true); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", g.rel, err)
	}
	if err := g.waitFrozen(ctx, true); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", g.rel, err)
	}
	return nil
}

// Thaw lets the processes of the group run again.
func (g *Group) Thaw(ctx context.Context) error {
	if err := g.setFrozen(false); err != nil {
		return fmt.Errorf("thaw cgroup %s: %w", g.rel, err)
	}
	if err := g.waitFrozen(ctx, false); err != nil {
		return fmt.Errorf("thaw cgroup %s: %w", g.rel, err)
	}
	return nil
}

// Frozen reports whether the group is frozen or being frozen.
func (g *Group) Frozen() (bool, error) {
	h := g.layout.byCtrl[Freezer]
	if h.v2 {
		s, err := readTrim(filepath.Join(g.dir(h), "cgroup.freeze"))
		return s == "1", gone(err)
	}
	s, err := readTrim(filepath.Join(g.dir(h), "freezer.state"))
	return s == "FROZEN" || s == "FREEZING", gone(err)
}

// setFrozen asks the kernel to freeze or thaw the group, without waiting.
func (g *Group) setFrozen(frozen bool) error {
	h := g.layout.byCtrl[Freezer]
	var file, v string
	switch {
	case h.v2 && frozen:
		file, v = "cgroup.freeze", "1"
	case h.v2:
		file, v = "cgroup.freeze", "0"
	case frozen:
		file, v = "freezer.state", "FROZEN"
	default:
		file, v = "freezer.state", "THAWED"
	}
	return gone(writeFile(filepath.Join(g.dir(h), file), v))
}

// settled reports whether the kernel has finished freezing (or thawing) the group: v1's
// freezer.state reads FROZEN (THAWED) rather than FREEZING, v2's cgroup.events says frozen 1
// (frozen 0).
func (g *Group) settled(frozen bool) (bool, error) {
	h := g.layout.byCtrl[Freezer]
	if !h.v2 {
		s, err := readTrim(filepath.Join(g.dir(h), "freezer.state"))
		if frozen {
			return s == "FROZEN", gone(err)
		}
		return s == "THAWED", gone(err)
	}
	b, err := os.ReadFile(filepath.Join(g.dir(h), "cgroup.events"))
	if err != nil {
		return false, gone(err)
	}
	want := "frozen 0"
	if frozen {
		want = "frozen 1"
	}
	for line := range strings.Lines(string(b)) {
		if strings.TrimSpace(line) == want {
			return true, nil
		}
	}
	return false, nil
}

func (g *Group) waitFrozen(ctx context.Context, frozen bool) error {
	return poll(ctx, settleTimeout, func() (bool, error) { return g.settled(frozen) })
}

// poll calls done until it reports true, fails, or timeout passes. It checks at once, then
// backs off from 20µs to 5ms: a freeze of an idle group settles within microseconds.
func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled after %v", timeout)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// gone maps "no such file" (the group was removed) to ErrGone.
func gone(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrGone, err)
	}
	return err
}
