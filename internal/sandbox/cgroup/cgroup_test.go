package cgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		file string
		want []mount
	}{
		{"hybrid.mountinfo", []mount{
			{point: "/sys/fs/cgroup/cpu", ctrls: []string{CPU}},
			{point: "/sys/fs/cgroup/cpuacct"},
			{point: "/sys/fs/cgroup/memory", ctrls: []string{Memory}},
			{point: "/sys/fs/cgroup/freezer", ctrls: []string{Freezer}},
			{point: "/sys/fs/cgroup/pids", ctrls: []string{PIDs}},
			{point: "/sys/fs/cgroup/systemd"},
			{point: "/sys/fs/cgroup/unified", v2: true},
		}},
		{"v2.mountinfo", []mount{{point: "/sys/fs/cgroup", v2: true}}},
		{"v1-comounted.mountinfo", []mount{
			{point: "/sys/fs/cgroup/cpu,cpuacct", ctrls: []string{CPU}},
			{point: "/sys/fs/cgroup/memory", ctrls: []string{Memory}},
			{point: "/sys/fs/cgroup/pids", ctrls: []string{PIDs}},
			{point: "/sys/fs/cgroup/freezer", ctrls: []string{Freezer}},
			{point: "/sys/fs/cgroup/my cgroups"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := parseMountinfo(f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.want, func(a, b mount) bool {
				return a.point == b.point && a.v2 == b.v2 && slices.Equal(a.ctrls, b.ctrls)
			}) {
				t.Fatalf("parseMountinfo:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLayoutOf(t *testing.T) {
	v1 := func(point string, ctrls ...string) mount { return mount{point: point, ctrls: ctrls} }
	v2 := mount{point: "/sys/fs/cgroup/unified", v2: true}
	tests := []struct {
		name     string
		mounts   []mount
		offered  []string // by the v2 hierarchy
		want     map[string]string
		describe string
	}{
		{
			name:     "v1 wins over v2",
			mounts:   []mount{v1("/cg/memory", Memory), v1("/cg/freezer", Freezer), v1("/cg/pids", PIDs), v1("/cg/cpu", CPU), v2},
			offered:  []string{Memory, PIDs, CPU},
			want:     map[string]string{Memory: "/cg/memory", Freezer: "/cg/freezer", PIDs: "/cg/pids", CPU: "/cg/cpu"},
			describe: "cgroup v1 /cg/freezer (freezer); v1 /cg/memory (memory); v1 /cg/pids (pids); v1 /cg/cpu (cpu)",
		},
		{
			name:     "v2 only",
			mounts:   []mount{{point: "/sys/fs/cgroup", v2: true}},
			offered:  []string{"cpuset", CPU, "io", Memory, PIDs},
			want:     map[string]string{Memory: "/sys/fs/cgroup", Freezer: "/sys/fs/cgroup", PIDs: "/sys/fs/cgroup", CPU: "/sys/fs/cgroup"},
			describe: "cgroup v2 /sys/fs/cgroup (freezer, memory, pids, cpu)",
		},
		{
			name:    "hybrid without v2 controllers",
			mounts:  []mount{v1("/cg/memory", Memory), v2},
			offered: []string{"hugetlb"},
			want:    map[string]string{Memory: "/cg/memory", Freezer: "/sys/fs/cgroup/unified"},
		},
		{
			name:   "co-mounted",
			mounts: []mount{v1("/cg/cpu,cpuacct", CPU), v1("/cg/cpu2", CPU), v1("/cg/freezer", Freezer)},
			want:   map[string]string{CPU: "/cg/cpu,cpuacct", Freezer: "/cg/freezer"},
		},
		{name: "none", want: map[string]string{}, describe: "no cgroup hierarchies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := layoutOf(tt.mounts, func(string) []string { return tt.offered })
			got := map[string]string{}
			for c, h := range l.byCtrl {
				got[c] = h.mount
			}
			if len(got) != len(tt.want) {
				t.Fatalf("layout %v, want %v", got, tt.want)
			}
			for c, m := range tt.want {
				if got[c] != m {
					t.Fatalf("layout %v, want %v", got, tt.want)
				}
			}
			if tt.describe != "" && l.String() != tt.describe {
				t.Fatalf("String: %q, want %q", l.String(), tt.describe)
			}
		})
	}
}

func TestGroupPath(t *testing.T) {
	l := &Layout{}
	for _, rel := range []string{"", ".", "/abs", "a/../b", "a//b", "../a", "a/"} {
		if _, err := l.Group(rel); err == nil {
			t.Errorf("Group(%q) succeeded", rel)
		}
	}
	if g, err := l.Group("agentd/x/y"); err != nil || g.Path() != "agentd/x/y" {
		t.Fatalf("Group: %v, %v", g, err)
	}
	if missing := l.Missing(Limits{MemoryBytes: 1, PIDs: 1, CPUs: 1}); !slices.Equal(missing, []string{Memory, PIDs, CPU}) {
		t.Fatalf("Missing: %q", missing)
	}
}

// liveLayout returns the machine's layout, or skips (fails under CI) without root or
// controllers.
func liveLayout(t *testing.T) *Layout {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format+" (CI is set)", args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		unavailable("creating cgroups needs root")
	}
	l, err := Detect()
	if err != nil {
		unavailable("no cgroups: %v", err)
	}
	if missing := l.Missing(Limits{MemoryBytes: 1, PIDs: 1, CPUs: 1}); len(missing) > 0 {
		unavailable("missing cgroup controllers: %v", missing)
	}
	return l
}

// TestGroupLifecycle creates a group with limits, moves a process in the way sandboxes are
// moved (their first process writes "0" to JoinFiles, then execs), freezes, thaws and
// destroys it: on the machine's layout, and where the machine also mounts cgroup v2 (a hybrid
// such as systemd's), with the v2 freezer (cgroup.freeze, cgroup.kill) in place of v1's.
func TestGroupLifecycle(t *testing.T) {
	l := liveLayout(t)
	t.Run("machine", func(t *testing.T) { testLifecycle(t, l) })
	t.Run("v2 freezer", func(t *testing.T) {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		mounts, err := parseMountinfo(f)
		if err != nil {
			t.Fatal(err)
		}
		mounts = slices.DeleteFunc(mounts, func(m mount) bool { return slices.Contains(m.ctrls, Freezer) })
		v2 := layoutOf(mounts, readV2Controllers)
		if h := v2.byCtrl[Freezer]; h == nil || !h.v2 {
			t.Skip("this machine mounts no cgroup v2 hierarchy")
		}
		testLifecycle(t, v2)
	})
}

// waitBound bounds the waits for what the kernel does at once on an idle machine, and may
// take seconds on a busy one.
const waitBound = time.Minute

func testLifecycle(t *testing.T, l *Layout) {
	ctx := context.Background()
	parent := "agentd-cgroup-test-" + strconv.Itoa(os.Getpid())
	g, err := l.Group(parent + "/g")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.Destroy(ctx)
		l.Prune(parent)
		if p, err := l.Group(parent); err != nil || p.Exists() {
			t.Errorf("the test's parent group is left after Prune (%v)", err)
		}
	})
	lim := Limits{MemoryBytes: 64 << 20, CPUs: 0.5, PIDs: 50}
	if err := g.Create(lim); err != nil {
		t.Fatal(err)
	}
	if err := g.Create(lim); err == nil {
		t.Fatal("a second Create of the same group succeeded")
	}
	l.Prune(parent) // refused: the parent holds g
	if !g.Exists() {
		t.Fatal("Prune of the parent removed a group in it")
	}
	checkLimits(t, l, g, lim)

	waited := startIn(t, g)
	if err := g.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	if frozen, err := g.Frozen(); err != nil || !frozen {
		t.Fatalf("Frozen after Freeze: %v, %v", frozen, err)
	}
	if err := g.Freeze(ctx); err != nil {
		t.Fatalf("freeze twice: %v", err)
	}
	if err := g.Thaw(ctx); err != nil {
		t.Fatal(err)
	}
	if frozen, err := g.Frozen(); err != nil || frozen {
		t.Fatalf("Frozen after Thaw: %v, %v", frozen, err)
	}
	if err := g.Freeze(ctx); err != nil { // Destroy kills a frozen group too
		t.Fatal(err)
	}
	if err := g.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the process in the group ended with %v, want SIGKILL", err)
		}
	case <-time.After(waitBound):
		t.Fatalf("the process in the group was not reaped within %v of Destroy", waitBound)
	}
	if g.Exists() {
		t.Fatal("the group exists after Destroy")
	}
	if err := g.Destroy(ctx); err != nil {
		t.Fatalf("destroy twice: %v", err)
	}
	if err := g.Freeze(ctx); !errors.Is(err, ErrGone) {
		t.Fatalf("freeze of a removed group: %v, want ErrGone", err)
	}
}

// startIn starts a sleeping process in the empty group g, moved in the way sandboxes are
// moved (their first process writes "0" to JoinFiles, then execs), and returns once it is
// the group's one process. Its Wait's result arrives on the channel; it is killed at cleanup.
func startIn(t *testing.T, g *Group) <-chan error {
	t.Helper()
	script := `while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"`
	args := append([]string{"-c", script, "join"}, g.JoinFiles()...)
	cmd := exec.Command("/bin/sh", append(args, "--", "sleep", "600")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	deadline := time.Now().Add(waitBound)
	for {
		pids, err := g.PIDs()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(pids, []int{cmd.Process.Pid}) {
			return waited
		}
		if time.Now().After(deadline) {
			t.Fatalf("group processes after %v: %v, want [%d]", waitBound, pids, cmd.Process.Pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkLimits reads back the limit files Create wrote.
func checkLimits(t *testing.T, l *Layout, g *Group, lim Limits) {
	t.Helper()
	read := func(ctrl, file string) string {
		s, err := readTrim(filepath.Join(g.dir(l.byCtrl[ctrl]), file))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mem := strconv.FormatInt(lim.MemoryBytes, 10)
	if l.byCtrl[Memory].v2 {
		if got := read(Memory, "memory.max"); got != mem {
			t.Errorf("memory.max %s, want %s", got, mem)
		}
	} else if got := read(Memory, "memory.limit_in_bytes"); got != mem {
		t.Errorf("memory.limit_in_bytes %s, want %s", got, mem)
	}
	if got := read(PIDs, "pids.max"); got != strconv.FormatInt(lim.PIDs, 10) {
		t.Errorf("pids.max %s, want %d", got, lim.PIDs)
	}
	if l.byCtrl[CPU].v2 {
		if got := read(CPU, "cpu.max"); got != "50000 100000" {
			t.Errorf("cpu.max %s", got)
		}
	} else if got := read(CPU, "cpu.cfs_quota_us"); got != "50000" {
		t.Errorf("cpu.cfs_quota_us %s", got)
	}
	for _, f := range g.JoinFiles() {
		if base := filepath.Base(f); base != "tasks" && base != "cgroup.procs" {
			t.Errorf("JoinFiles %q", g.JoinFiles())
		}
	}
}

// TestHoldFreezer: on a v1 freezer the hold is an empty group, frozen until it is released,
// which removes it; a hold left behind (by a process that ended without releasing it) is
// taken up again, and releasing none does no harm. On a v2 freezer it creates nothing.
func TestHoldFreezer(t *testing.T) {
	l := liveLayout(t)
	ctx := context.Background()
	parent := "agentd-hold-test-" + strconv.Itoa(os.Getpid())
	rel := parent + "/hold"
	g, err := l.Group(rel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.ReleaseFreezer(rel)
		l.Prune(parent)
	})
	if err := l.HoldFreezer(ctx, rel); err != nil {
		t.Fatal(err)
	}
	if l.byCtrl[Freezer].v2 {
		if g.Exists() {
			t.Fatal("a hold on a v2 freezer created a group")
		}
		if err := l.ReleaseFreezer(rel); err != nil {
			t.Fatal(err)
		}
		return
	}
	held := func() {
		t.Helper()
		if frozen, err := g.Frozen(); err != nil || !frozen {
			t.Fatalf("the held group: frozen %v, %v", frozen, err)
		}
		if pids, err := g.PIDs(); err != nil || len(pids) != 0 {
			t.Fatalf("the held group has processes %v (%v)", pids, err)
		}
	}
	held()
	if err := l.HoldFreezer(ctx, rel); err != nil { // as a restarted server takes up a hold left behind
		t.Fatalf("hold a group held already: %v", err)
	}
	held()
	if err := l.ReleaseFreezer(rel); err != nil {
		t.Fatal(err)
	}
	if g.Exists() {
		t.Fatal("the group is left after release")
	}
	if err := l.ReleaseFreezer(rel); err != nil {
		t.Fatalf("release a hold released already: %v", err)
	}
	if err := l.HoldFreezer(ctx, "../escape"); err == nil {
		t.Fatal("a hold on an unclean path succeeded")
	}
}
