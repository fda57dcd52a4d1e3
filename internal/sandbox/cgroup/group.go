package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Limits bound a group. Zero means unlimited.
type Limits struct {
	MemoryBytes int64   // memory, swap included (swap is not allowed on top of it)
	CPUs        float64 // CPU time, in CPUs' worth per period
	PIDs        int64   // tasks: processes and their threads
}

// cpuPeriod is the CFS period CPU quotas are expressed in, in microseconds (the kernel's
// default).
const cpuPeriod = 100_000

// Missing returns the controllers lim needs that the machine lacks.
func (l *Layout) Missing(lim Limits) []string {
	var out []string
	for _, c := range lim.controllers() {
		if !l.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

func (lim Limits) controllers() []string {
	var out []string
	if lim.MemoryBytes > 0 {
		out = append(out, Memory)
	}
	if lim.PIDs > 0 {
		out = append(out, PIDs)
	}
	if lim.CPUs > 0 {
		out = append(out, CPU)
	}
	return out
}

// Group is one sandbox's group, with the same relative path in every hierarchy it uses.
// Its methods may be called concurrently; the kernel serialises what they write.
type Group struct {
	layout *Layout
	rel    string
}

// Path is the group's path relative to the hierarchies' roots.
func (g *Group) Path() string { return g.rel }

func (g *Group) dir(h *hierarchy) string { return filepath.Join(h.mount, g.rel) }

// JoinFiles are the files, one per hierarchy, a single-threaded process writes "0" to in
// order to move itself into the group: v1's tasks and v2's cgroup.procs. In v1, moving the
// writing thread itself ("0" to tasks) is the one migration that skips the kernel's global
// threadgroup lock, whose RCU grace period otherwise costs milliseconds per move; for a
// single-threaded process the thread is the whole process.
func (g *Group) JoinFiles() []string {
	var out []string
	for _, h := range g.layout.hierarchies() {
		file := "tasks"
		if h.v2 {
			file = "cgroup.procs"
		}
		out = append(out, filepath.Join(g.dir(h), file))
	}
	return out
}

// Create makes the group in every hierarchy (and its parents as needed) and writes lim. A
// group that exists already is an error, so a group is never taken over. On error nothing
// of the group is left.
func (g *Group) Create(lim Limits) (err error) {
	if missing := g.layout.Missing(lim); len(missing) > 0 {
		return fmt.Errorf("create cgroup %s: %w: %s", g.rel, ErrNoController, strings.Join(missing, ", "))
	}
	var made []string
	defer func() {
		if err != nil {
			for _, d := range slices.Backward(made) {
				_ = os.Remove(d)
			}
		}
	}()
	for _, h := range g.layout.hierarchies() {
		if err := g.mkdir(h); err != nil {
			return fmt.Errorf("create cgroup %s: %w", g.rel, err)
		}
		made = append(made, g.dir(h))
	}
	if h := g.layout.byCtrl[Freezer]; h.v2 {
		if _, err := os.Stat(filepath.Join(g.dir(h), "cgroup.freeze")); err != nil {
			return fmt.Errorf("create cgroup %s: the kernel has no cgroup v2 freezer: %w", g.rel, err)
		}
	}
	if err := g.weigh(); err != nil {
		return fmt.Errorf("create cgroup %s: %w", g.rel, err)
	}
	if err := g.setLimits(lim); err != nil {
		return fmt.Errorf("create cgroup %s: %w", g.rel, err)
	}
	return nil
}

// mkdir creates the group's directory in hierarchy h, with its ancestors. Prune may remove an
// empty ancestor meanwhile (another backend closing); then it starts again, a few times.
func (g *Group) mkdir(h *hierarchy) error {
	for attempt := 0; ; attempt++ {
		var err error
		if h.v2 {
			err = g.layout.enableV2(h, filepath.Dir(g.rel))
		} else {
			err = os.MkdirAll(filepath.Dir(g.dir(h)), 0o755)
		}
		if err == nil {
			err = os.Mkdir(g.dir(h), 0o755)
		}
		if !errors.Is(err, os.ErrNotExist) || attempt == 3 {
			return err
		}
	}
}

// Prune removes the group at rel and then its ancestors, in every hierarchy, as long as they
// are empty (no process, no child group). It is for the parents of sandboxes' groups, which
// Create makes as needed; the kernel refuses to remove a group that is not empty, so a
// concurrent Create is never harmed, only made to retry.
func (l *Layout) Prune(rel string) {
	for _, h := range l.hierarchies() {
		for r := rel; r != "." && r != "/" && r != ""; r = filepath.Dir(r) {
			if err := os.Remove(filepath.Join(h.mount, r)); err != nil {
				break
			}
		}
	}
}

// enableV2 creates the ancestors of a group in v2 hierarchy h (rel is the parent's path)
// and enables the controllers v2 provides here in each level's cgroup.subtree_control, from
// the root down, so the group gets them.
func (l *Layout) enableV2(h *hierarchy, rel string) error {
	var want []string
	for _, c := range []string{Memory, PIDs, CPU} {
		if l.byCtrl[c] == h {
			want = append(want, c)
		}
	}
	dir := h.mount
	levels := strings.Split(rel, "/")
	for i := 0; ; i++ {
		if err := enableSubtree(dir, want); err != nil {
			return err
		}
		if i == len(levels) || rel == "." {
			return nil
		}
		dir = filepath.Join(dir, levels[i])
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
}

// enableSubtree enables controllers want for the children of v2 group dir, where they are
// not enabled yet.
func enableSubtree(dir string, want []string) error {
	if len(want) == 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(b))
	for _, c := range want {
		if slices.Contains(have, c) {
			continue
		}
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			return fmt.Errorf("enable the %s controller: %w", c, err)
		}
	}
	return nil
}

// setLimits writes lim into the group's files.
func (g *Group) setLimits(lim Limits) error {
	if lim.MemoryBytes > 0 {
		h := g.layout.byCtrl[Memory]
		n := strconv.FormatInt(lim.MemoryBytes, 10)
		if h.v2 {
			if err := writeFile(filepath.Join(g.dir(h), "memory.max"), n); err != nil {
				return err
			}
			if err := writeIfExists(filepath.Join(g.dir(h), "memory.swap.max"), "0"); err != nil {
				return err
			}
		} else {
			// memsw (memory plus swap) must not be below the memory limit, so it goes second.
			if err := writeFile(filepath.Join(g.dir(h), "memory.limit_in_bytes"), n); err != nil {
				return err
			}
			if err := writeIfExists(filepath.Join(g.dir(h), "memory.memsw.limit_in_bytes"), n); err != nil {
				return err
			}
		}
	}
	if lim.PIDs > 0 {
		h := g.layout.byCtrl[PIDs]
		if err := writeFile(filepath.Join(g.dir(h), "pids.max"), strconv.FormatInt(lim.PIDs, 10)); err != nil {
			return err
		}
	}
	if lim.CPUs > 0 {
		h := g.layout.byCtrl[CPU]
		quota := max(1000, int64(math.Ceil(lim.CPUs*cpuPeriod)))
		if h.v2 {
			return writeFile(filepath.Join(g.dir(h), "cpu.max"), fmt.Sprintf("%d %d", quota, cpuPeriod))
		}
		if err := writeFile(filepath.Join(g.dir(h), "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		return writeFile(filepath.Join(g.dir(h), "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10))
	}
	return nil
}

// Exists reports whether the group exists in any hierarchy.
func (g *Group) Exists() bool {
	for _, h := range g.layout.hierarchies() {
		if _, err := os.Stat(g.dir(h)); err == nil {
			return true
		}
	}
	return false
}

// PIDs returns the processes in the group, in any hierarchy. Zombies are not listed: the
// kernel takes a process out of its groups when it exits. A group that does not exist has
// none.
func (g *Group) PIDs() ([]int, error) {
	var out []int
	for _, h := range g.layout.hierarchies() {
		b, err := os.ReadFile(filepath.Join(g.dir(h), "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list processes of cgroup %s: %w", g.rel, err)
		}
		for f := range strings.FieldsSeq(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("list processes of cgroup %s: %q", g.rel, f)
			}
			if !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// writeFile writes s to an existing file (cgroupfs files cannot be created).
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", s, path, err)
	}
	return nil
}

// writeIfExists writes s to path if the kernel offers that file (memsw needs swap
// accounting; swap.max needs swap support).
func writeIfExists(path, s string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return writeFile(path, s)
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}
