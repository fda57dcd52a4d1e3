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

// weigh writes the weight WeighCPU set to its group, if g is below it.
func (g *Group) weigh() error {
	l := g.layout
	h := l.byCtrl[CPU]
	if l.weighed == "" || h == nil || !strings.HasPrefix(g.rel, l.weighed+"/") {
		return nil
	}
	file, value := "cpu.shares", strconv.Itoa(max(2, l.weight*1024/DefaultCPUWeight))
	if h.v2 {
		file, value = "cpu.weight", strconv.Itoa(l.weight)
	}
	if err := writeFile(filepath.Join(h.mount, l.weighed, file), value); err != nil {
		return fmt.Errorf("weigh cgroup %s: %w", l.weighed, err)
	}
	return nil
}
