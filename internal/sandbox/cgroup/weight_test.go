package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestDestroyFavours: once killed processes have not ended within favourAfter (here at
// once), and until Destroy returns, their group has no CPU quota and weighs the most, and the
// weighed group above it weighs the default, also through a Create meanwhile and while
// another favour overlaps; when the last one ends, the weighed group has its own weight
// again.
func TestDestroyFavours(t *testing.T) {
	l, top, create := favourLayout(t, 0)
	ctx := context.Background()
	weight := func(rel string) int {
		t.Helper()
		w, err := l.CPUWeight(rel)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	g := create("parent/g")
	other := create("parent/other")
	waited := startIn(t, g)
	// A group below g keeps Destroy from removing g: it waits, favouring g, until its
	// context ends.
	create("parent/g/child")
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	destroyed := make(chan error, 1)
	go func() { destroyed <- g.Destroy(dctx) }()
	select {
	case <-waited:
	case <-time.After(waitBound):
		t.Fatalf("the process in the group did not end within %v of Destroy", waitBound)
	}
	deadline := time.Now().Add(waitBound)
	for weight(top) != DefaultCPUWeight {
		if time.Now().After(deadline) {
			t.Fatalf("the weighed group weighs %d %v after Destroy killed its processes, want %d", weight(top), waitBound, DefaultCPUWeight)
		}
		time.Sleep(time.Millisecond)
	}
	if w := weight(g.Path()); w != maxCPUWeight {
		t.Errorf("the dying group weighs %d, want %d", w, maxCPUWeight)
	}
	h := l.byCtrl[CPU]
	file, want := "cpu.cfs_quota_us", "-1"
	if h.v2 {
		file, want = "cpu.max", "max"
	}
	if q, err := readTrim(filepath.Join(g.dir(h), file)); err != nil || !strings.HasPrefix(q, want) {
		t.Errorf("the dying group's %s reads %q (%v), want %s", file, q, err, want)
	}
	if w := weight(other.Path()); w != DefaultCPUWeight {
		t.Errorf("a sibling of the dying group weighs %d, want %d", w, DefaultCPUWeight)
	}

	release := other.favour() // overlaps the Destroy's
	create("parent/late")     // Create writes the weighed group's weight
	cancel()
	if err := <-destroyed; !errors.Is(err, context.Canceled) {
		t.Fatalf("Destroy of a group with a child group: %v, want it to wait until its context ends", err)
	}
	if w := weight(top); w != DefaultCPUWeight {
		t.Errorf("the weighed group weighs %d while a favour is left, want %d", w, DefaultCPUWeight)
	}
	release()
	if w := weight(top); w != 10 {
		t.Errorf("the weighed group weighs %d after every favour ended, want 10", w)
	}
}

// TestDestroyPromptNoFavour: a Destroy whose killed process ends within favourAfter leaves
// the weights as they are (a weight written by hand stays; favour's end would write 10).
func TestDestroyPromptNoFavour(t *testing.T) {
	l, top, create := favourLayout(t, time.Hour)
	g := create("parent/g")
	startIn(t, g)
	const marker = 37
	if err := l.writeWeight(top, marker); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w, err := l.CPUWeight(top); err != nil || w != marker {
		t.Errorf("the weighed group weighs %d (%v) after a prompt Destroy, want %d as it was", w, err, marker)
	}
}

// favourLayout returns the machine's layout with favourAfter after, weighing a top group of
// the test's at 10, and a function that creates the group at rel below that top with
// a CPU quota. The groups go at cleanup, the last made first, and the top with them.
func favourLayout(t *testing.T, after time.Duration) (l *Layout, top string, create func(rel string) *Group) {
	t.Helper()
	l = liveLayout(t)
	l.favourAfter = after
	top = "agentd-favour-test-" + strconv.Itoa(os.Getpid())
	l.WeighCPU(top, 10)
	var made []*Group
	t.Cleanup(func() {
		for _, g := range slices.Backward(made) {
			if err := g.Destroy(context.Background()); err != nil {
				t.Errorf("destroy %s: %v", g.Path(), err)
			}
		}
		l.Prune(top + "/parent")
		if p, err := l.Group(top); err != nil || p.Exists() {
			t.Errorf("the test's groups are left after Prune (%v)", err)
		}
	})
	create = func(rel string) *Group {
		t.Helper()
		g, err := l.Group(top + "/" + rel)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Create(Limits{CPUs: 0.5}); err != nil {
			t.Fatal(err)
		}
		made = append(made, g)
		return g
	}
	return l, top, create
}
