package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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

// HoldFreezer freezes an empty group at rel in the cgroup v1 freezer hierarchy, where it stays
// frozen until ReleaseFreezer. It is an optimisation only. Since Linux 6.1 the v1 freezer is
// switched on by a static key while any group is frozen, and the kernel patches its own code,
// on every CPU, whenever that count goes from zero to one or back: on a virtual machine that
// costs about a millisecond and a half, paid by every freeze and every thaw of the only frozen
// group. While the held group is frozen the key stays on, so a sandbox's freeze and thaw cost
// what the freezer itself does. What it costs: an empty group, and the kernel's freezer check
// (at signal delivery and the like) takes its slow path of a few nanoseconds on every process,
// as it does whenever any container on the machine is paused. A group left by a process that
// ended without releasing it (still frozen, still empty) is taken up again. On a v2 freezer,
// which has no such key, it does nothing.
func (l *Layout) HoldFreezer(ctx context.Context, rel string) error {
	g, h, err := l.freezerHold(rel)
	if err != nil || h == nil {
		return err
	}
	if err := g.mkdir(h); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("hold the freezer: create cgroup %s: %w", rel, err)
	}
	if err := g.Freeze(ctx); err != nil {
		_ = os.Remove(g.dir(h))
		return fmt.Errorf("hold the freezer: %w", err)
	}
	return nil
}

// ReleaseFreezer removes the group HoldFreezer made at rel, or one a process that ended
// without releasing it left; the kernel removes an empty group frozen as it is. Where there is
// none it does nothing.
func (l *Layout) ReleaseFreezer(rel string) error {
	g, h, err := l.freezerHold(rel)
	if err != nil || h == nil {
		return err
	}
	if err := os.Remove(g.dir(h)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release the freezer: %w", err)
	}
	return nil
}

// freezerHold returns the group of a freezer hold at rel and the v1 freezer hierarchy it is
// made in; no hierarchy where the freezer is v2.
func (l *Layout) freezerHold(rel string) (*Group, *hierarchy, error) {
	h := l.byCtrl[Freezer]
	if h == nil || h.v2 {
		return nil, nil, nil
	}
	g, err := l.Group(rel)
	if err != nil {
		return nil, nil, fmt.Errorf("freezer hold: %w", err)
	}
	return g, h, nil
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
// backs off from 20 µs to 5 ms: a freeze of an idle group settles within a few hundred
// microseconds. It sleeps less than a millisecond in nanosleep, on its own thread: a Go timer
// that short fires after about a millisecond on Linux (the runtime waits for timers in
// epoll_wait, whose timeout is in milliseconds), which made each pause a millisecond longer.
// Checking without sleeping would not do: at its tenth of agentd's CPU weight a sandbox
// being frozen would wait for the CPU the checks take.
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
		if err := ctx.Err(); err != nil {
			return err
		}
		if delay < time.Millisecond {
			ts := unix.NsecToTimespec(int64(delay))
			_ = unix.Nanosleep(&ts, nil) // interrupted early: the next check comes sooner
			continue
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
