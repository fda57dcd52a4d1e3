package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultCPUWeight is the kernel's CPU weight of a group on cgroup v2's scale (cpu.weight);
// v1's cpu.shares of 1024.
const DefaultCPUWeight = 100

// WeighCPU makes the group at rel, an ancestor of the groups Create makes (such as "agentd"),
// weigh weight against its siblings for CPU time, on cgroup v2's scale (1 to 10000, the
// kernel's default being DefaultCPUWeight; on v1 cpu.shares is weight×1024/100): under
// contention, everything below it together gets that share of what its siblings (the
// processes and groups beside it, such as the control plane) get. The weight is written each
// time Create makes a group below rel, since Prune removes rel when it empties and the
// kernel gives a new group the default. Call it before the first Create; a machine without
// the CPU controller ignores it.
func (l *Layout) WeighCPU(rel string, weight int) {
	l.weighed, l.weight = rel, max(1, min(weight, 10000))
}

// CPUWeight reads the CPU weight of the group at rel on cgroup v2's scale.
func (l *Layout) CPUWeight(rel string) (int, error) {
	h := l.byCtrl[CPU]
	if h == nil {
		return 0, fmt.Errorf("cpu weight of %s: %w: cpu", rel, ErrNoController)
	}
	file, scale := "cpu.shares", 1024
	if h.v2 {
		file, scale = "cpu.weight", DefaultCPUWeight
	}
	v, err := readTrim(filepath.Join(h.mount, rel, file))
	if err != nil {
		return 0, fmt.Errorf("cpu weight of %s: %w", rel, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("cpu weight of %s: %q", rel, v)
	}
	return (n*DefaultCPUWeight + scale/2) / scale, nil
}

// weigh writes the weight WeighCPU set to its group, if g is below it (the default while
// a Destroy below it favours its group).
func (g *Group) weigh() error {
	l := g.layout
	if !l.belowWeighed(g.rel) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.weighLocked(); err != nil {
		return fmt.Errorf("weigh cgroup %s: %w", l.weighed, err)
	}
	return nil
}

// weighLocked writes the weighed group's weight: the one WeighCPU set, or the default while a
// Destroy below it favours its group. l.mu must be held.
func (l *Layout) weighLocked() error {
	if l.favoured > 0 {
		return l.writeWeight(l.weighed, DefaultCPUWeight)
	}
	return l.writeWeight(l.weighed, l.weight)
}

// belowWeighed reports whether the group at rel is below the group WeighCPU named, on a
// machine with the CPU controller.
func (l *Layout) belowWeighed(rel string) bool {
	return l.weighed != "" && l.byCtrl[CPU] != nil && strings.HasPrefix(rel, l.weighed+"/")
}

// writeWeight writes weight, on cgroup v2's scale, as the CPU weight of the group at rel.
func (l *Layout) writeWeight(rel string, weight int) error {
	h := l.byCtrl[CPU]
	file, value := "cpu.shares", strconv.Itoa(max(2, weight*1024/DefaultCPUWeight))
	if h.v2 {
		file, value = "cpu.weight", strconv.Itoa(weight)
	}
	return writeFile(filepath.Join(h.mount, rel, file), value)
}

// maxCPUWeight is the most a group can weigh on cgroup v2's scale (v1's cpu.shares of
// 102400, below its limit of 262144).
const maxCPUWeight = 10000

// favour gives the CPU to a group whose processes have all been sent SIGKILL and have not
// ended within favourAfter: a killed process ends only once it runs, and below the group
// WeighCPU named, with every CPU taken by others, sandboxes get a tenth of a process's share.
// Beside stress-ng --cpu 8, a killed fork bomb of about 850 processes took 59 s to end at
// that weight (one of 710 took 1.6 s at the default); favoured, one of 1,013 took 5.6 s. So
// the group loses its CPU quota, weighs the most beside its siblings (the other sandboxes),
// and the weighed group weighs the default until release is called by every Destroy that
// favours.
//
// What it costs: while such a Destroy runs (seconds on a busy machine), the sandboxes
// together weigh as much as one process beside the control plane, not a tenth; the dying
// group takes nearly all of that while its processes run, the others what it leaves. On a
// busy machine, a tenant who deletes sandboxes over and over keeps it so much of the time.
// Two servers on one machine share the weighed group but not this count: one that stops
// favouring restores the weight while the other may still favour, whose dying processes
// then end at the tenth.
//
// Errors are ignored: the processes are killed either way, and end, if more slowly.
func (g *Group) favour() (release func()) {
	l := g.layout
	h := l.byCtrl[CPU]
	if h == nil {
		return func() {}
	}
	if h.v2 {
		_ = writeFile(filepath.Join(g.dir(h), "cpu.max"), "max")
	} else {
		_ = writeFile(filepath.Join(g.dir(h), "cpu.cfs_quota_us"), "-1")
	}
	_ = l.writeWeight(g.rel, maxCPUWeight)
	if !l.belowWeighed(g.rel) {
		return func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.favoured++; l.favoured == 1 {
		_ = l.weighLocked()
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.favoured--; l.favoured == 0 {
			_ = l.weighLocked()
		}
	}
}
