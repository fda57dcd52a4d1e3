package cgroup

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// TestWeighCPU: the group WeighCPU names gets its weight when a group below it is created,
// again after Prune removed it, and the groups below it keep the default.
func TestWeighCPU(t *testing.T) {
	l := liveLayout(t)
	top := "agentd-weight-test-" + strconv.Itoa(os.Getpid())
	l.WeighCPU(top, 10)
	for round := range 2 {
		g, err := l.Group(top + "/parent/g")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Create(Limits{}); err != nil {
			t.Fatal(err)
		}
		for rel, want := range map[string]int{top: 10, top + "/parent": DefaultCPUWeight, g.Path(): DefaultCPUWeight} {
			if got, err := l.CPUWeight(rel); err != nil || got != want {
				t.Errorf("round %d: weight of %s %d (%v), want %d", round, rel, got, err, want)
			}
		}
		if err := g.Destroy(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.Prune(top + "/parent")
		if p, err := l.Group(top); err != nil || p.Exists() {
			t.Fatalf("the weighed group is left after Prune (%v)", err)
		}
	}
	// A group outside it is not weighed.
	other := "agentd-weight-other-" + strconv.Itoa(os.Getpid())
	g, err := l.Group(other + "/g")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Create(Limits{}); err != nil {
		t.Fatal(err)
	}
	// Destroy removes g itself; Prune then removes the group above it.
	t.Cleanup(func() { g.Destroy(context.Background()); l.Prune(other) })
	if got, err := l.CPUWeight(other); err != nil || got != DefaultCPUWeight {
		t.Errorf("weight of a group outside %s: %d (%v)", top, got, err)
	}
}
