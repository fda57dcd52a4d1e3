package bwrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary serve as the sandboxes' runtime (see sandboxtest). The test
// binary is mounted at /.agentd/agentd like agentd itself; built with -race it is linked
// against the C library, which sandboxes find in the host's /usr.
func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }

// testRoot returns a fresh root directory short enough for unix socket paths. Its cleanup,
// which runs after that of every sandbox and backend of the test, removes the directory and
// the backend's cgroup parent, and fails the test if a cgroup was left in it.
func testRoot(t testing.TB) string {
	t.Helper()
	return testRootIn(t, "")
}

// testRootIn is testRoot in the directory parent ("" for the default temporary directory).
func testRootIn(t testing.TB, parent string) string {
	t.Helper()
	root, err := os.MkdirTemp(parent, "agentd-b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove root: %v", err)
		}
		cg, err := cgroup.Detect()
		if err != nil {
			return
		}
		if kids, err := cg.Children(testCgroupParentOf(root)); err != nil || len(kids) > 0 {
			t.Errorf("cgroups left under %s: %q (%v)", testCgroupParentOf(root), kids, err)
		}
		if hold, err := cg.Group(FreezerHoldOf(testCgroupParentOf(root))); err == nil && hold.Exists() {
			t.Errorf("the freezer hold %s is left after Close", hold.Path())
			_ = cg.ReleaseFreezer(hold.Path())
		}
		g, err := cg.Group(testCgroupParentOf(root))
		if err == nil {
			err = g.Destroy(context.Background())
		}
		if err != nil {
			t.Errorf("remove cgroup parent: %v", err)
		}
		// The tests' top level goes too, unless another test still uses it.
		if top, err := cg.Group(testCgroupTop); err == nil {
			if kids, err := cg.Children(testCgroupTop); err == nil && len(kids) == 0 {
				_ = top.Destroy(context.Background())
			}
		}
	})
	return root
}

// The tests' sandboxes live below testCgroupTop, not below agentd's own top level, and
// at the kernel's default CPU weight, not at a tenth of it: what the tests check does not
// depend on the weight (the e2e tests check agentd's), and at a tenth, with every CPU taken
// (stress-ng beside the other backends' suites), a fork bomb grew by a process a second (and
// its killed processes took over a minute to exit, before delete favoured a dying group).
// Apart, the tests leave the weight of agentd's own group (the e2e tests' servers) as it is.
const testCgroupTop = "agentd-test"

// testCgroupParentOf is the cgroup parent of the sandboxes of a test backend on root.
func testCgroupParentOf(root string) string {
	_, hash, _ := strings.Cut(CgroupParentOf(root), "/")
	return testCgroupTop + "/" + hash
}

// testOptions are the options of a test backend on root that runs binary.
func testOptions(root, binary string) Options {
	return Options{Root: root, Binary: binary, CgroupParent: testCgroupParentOf(root), CPUWeight: cgroup.DefaultCPUWeight}
}

var (
	probeOnce sync.Once
	probeErr  error
)

// newTestBackend returns a backend on root, or skips the test (fails it under CI) when
// bubblewrap or cgroups do not work on this machine.
func newTestBackend(t testing.TB, root string) *Backend {
	t.Helper()
	return newTestBackendOf(t, root, sandboxtest.Binary(t))
}

// newTestBackendOf is newTestBackend with binary as the runtime the sandboxes run.
func newTestBackendOf(t testing.TB, root, binary string) *Backend {
	t.Helper()
	opts := testOptions(root, binary)
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := New(opts)
	if err != nil {
		sandboxtest.Unavailable(t, "the bwrap backend is not available: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	probeOnce.Do(func() { probeErr = b.Probe(context.Background()) })
	if probeErr != nil {
		sandboxtest.Unavailable(t, "bubblewrap does not work here: %v", probeErr)
	}
	return b
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestConformance(t *testing.T) {
	root := testRoot(t)
	newTestBackend(t, root) // skip early, once, when bwrap does not work here
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newTestBackend(t, root) }, sandboxtest.Options{
		Spec: sandboxtest.RuntimeSpec("test"),
		Unsupported: []sandboxtest.SpecChange{
			{Name: "Image", Apply: func(s *sandbox.Spec) { s.Image = "ubuntu:24.04" }},
			{Name: "Disk", Apply: func(s *sandbox.Spec) { s.Limits.DiskBytes = 1 << 30 }},
			{Name: "MissingRootfs", Apply: func(s *sandbox.Spec) { s.Rootfs = "/nonexistent/rootfs" }},
			{Name: "WorkspaceInProc", Apply: func(s *sandbox.Spec) { s.WorkingDir = "/proc/ws" }},
		},
		Leftovers: func(inst sandbox.Instance) []string { return leftovers(root, inst) },
		New: func(root, binary string) (sandbox.Backend, error) {
			return New(testOptions(root, binary))
		},
		SandboxDir: func(id string) string { return filepath.Join(root, id) },
		// bwrap cannot exec the command inside the sandbox: Start quotes its log.
		StartFailure: sandboxtest.StartFailure{
			Apply: func(s *sandbox.Spec) { s.Command = []string{"/nonexistent/agentd-no-such-binary"} },
			Cause: "/nonexistent/agentd-no-such-binary",
		},
		Env: func(inst sandbox.Instance) map[string]string {
			return map[string]string{"PATH": DefaultPath, "HOME": inst.Workspace, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
		},
		IsolatesFilesystem: true,
		IsolatesSandboxes:  true,
		IsolatesNetwork:    true,
		LimitsMemory:       true,
		LimitsPIDs:         true,
		Confines:           true,
		AgentdPath:         runtimeBinary,
		DefaultLimits:      defaultLimits(t),
	})
	sandboxtest.CheckNoChildren(t)
}

// defaultLimits are the limits of the default spec of a server with the default
// configuration.
func defaultLimits(t *testing.T) sandbox.Limits {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return app.Specs(cfg)[0].Limits
}

// leftovers lists what is left of a sandbox of the backend on root: its cgroup in any
// hierarchy (the recorded one, else the one the backend gives it), processes in it, its
// directory.
func leftovers(root string, inst sandbox.Instance) []string {
	var left []string
	cg, err := cgroup.Detect()
	if err != nil {
		return []string{err.Error()}
	}
	st, _, err := decodeState(inst)
	if err != nil {
		return []string{err.Error()}
	}
	path := st.Cgroup
	if path == "" {
		path = testCgroupParentOf(root) + "/" + inst.ID
	}
	g, err := cg.Group(path)
	if err != nil {
		return []string{err.Error()}
	}
	if g.Exists() {
		left = append(left, "cgroup "+path)
	}
	if pids, _ := g.PIDs(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	dir := filepath.Join(root, inst.ID)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "directory "+dir)
	}
	return left
}

// TestProbeOutOfTime: a probe whose time runs out says so, rather than that bwrap was killed,
// and leaves no cgroup behind.
func TestProbeOutOfTime(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the probe's minute passed"))
	err := b.Probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not end in time (the probe's minute passed); the machine may be too busy") {
		t.Fatalf("probe out of time: %v", err)
	}
	children, err := b.cg.Children(b.cgParent)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		if strings.HasPrefix(c, "probe-") {
			t.Fatalf("probe cgroup %s left behind", c)
		}
	}
}

// TestStartStarvedRuntime: a sandbox held to a hundredth of a CPU, whose runtime takes longer
// to answer than a check of waitServing first gives it, still starts, within the start's own
// deadline rather than listenTimeout, and its runtime then runs commands.
func TestStartStarvedRuntime(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	spec := sandboxtest.RuntimeSpec("starved")
	spec.Network = sandbox.NetworkNone
	spec.Limits.CPUs = 0.01
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	key := sandboxtest.NewKey()
	begin := time.Now()
	inst, err := sandboxtest.TryStartContext(ctx, t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), Spec: spec, SessionKey: key})
	if err != nil {
		t.Fatalf("start a starved sandbox: %v", err)
	}
	t.Logf("a sandbox at a hundredth of a CPU served after %v", time.Since(begin))
	if res := runIn(t, client(t, inst, key), "echo served"); strings.TrimSpace(res.Output) != "served" {
		t.Fatalf("the starved sandbox ran echo: %q", res.Output)
	}
}

// TestNewNeedsBwrap: without bubblewrap there is no backend (the suite checks the rest of
// what New refuses).
func TestNewNeedsBwrap(t *testing.T) {
	_, err := New(Options{Root: sandboxtest.ShortDir(t), Binary: sandboxtest.Binary(t), Bwrap: "/nonexistent/bwrap"})
	if err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("New with a missing bwrap: %v", err)
	}
}

func TestCheckSpec(t *testing.T) {
	rootfs := t.TempDir()
	for _, d := range []string{"bin", "home"} {
		if err := os.Mkdir(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "sh"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	noShell := t.TempDir()
	full := &Backend{cg: detectOr(t)}
	bare := &Backend{cg: &cgroup.Layout{}} // a machine without controllers
	tests := []struct {
		name    string
		b       *Backend
		spec    sandbox.Spec
		wantErr error
		text    string
	}{
		{"plain", full, sandbox.Spec{}, nil, ""},
		{"no network", full, sandbox.Spec{Network: sandbox.NetworkNone}, nil, ""},
		{"limits", full, sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 1 << 30, CPUs: 1.5, PIDs: 100}}, nil, ""},
		{"rootfs", full, sandbox.Spec{Rootfs: rootfs}, nil, ""},
		{"rootfs workspace on the tmpfs root", full, sandbox.Spec{Rootfs: rootfs, WorkingDir: "/src/app"}, nil, ""},
		{"workspace below /tmp", full, sandbox.Spec{WorkingDir: "/tmp/ws"}, nil, ""},
		{"image", full, sandbox.Spec{Image: "ubuntu"}, sandbox.ErrUnsupported, "an image"},
		{"disk", full, sandbox.Spec{Limits: sandbox.Limits{DiskBytes: 1}}, sandbox.ErrUnsupported, "a disk limit"},
		{"no controllers", bare, sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 1, PIDs: 1}}, sandbox.ErrUnsupported, "a memory limit (this machine mounts no memory cgroup controller) and a pids limit"},
		{"missing rootfs", full, sandbox.Spec{Rootfs: "/nonexistent"}, sandbox.ErrUnsupported, "not a directory"},
		{"relative rootfs", full, sandbox.Spec{Rootfs: "rootfs"}, sandbox.ErrUnsupported, "not an absolute path"},
		{"rootfs without a shell", full, sandbox.Spec{Rootfs: noShell}, sandbox.ErrUnsupported, "no /bin/sh"},
		{"rootfs workspace in a missing directory", full, sandbox.Spec{Rootfs: rootfs, WorkingDir: "/home/user"}, sandbox.ErrUnsupported, "does not exist there"},
		{"workspace in /usr", full, sandbox.Spec{WorkingDir: "/usr/nonexistent-ws"}, sandbox.ErrUnsupported, "does not exist there"},
		{"workspace /", full, sandbox.Spec{WorkingDir: "/"}, sandbox.ErrUnsupported, "clean absolute path"},
		{"relative workspace", full, sandbox.Spec{WorkingDir: "ws"}, sandbox.ErrUnsupported, "clean absolute path"},
		{"workspace in /.agentd", full, sandbox.Spec{WorkingDir: "/.agentd/ws"}, sandbox.ErrUnsupported, "own mounts"},
		{"several", full, sandbox.Spec{Image: "x", Limits: sandbox.Limits{DiskBytes: 1}}, sandbox.ErrUnsupported, "a disk limit (the workspace is a host directory without a quota) and an image"},
		{"unknown network", full, sandbox.Spec{Network: "bridge"}, nil, "unknown network"},
		{"negative limit", full, sandbox.Spec{Limits: sandbox.Limits{PIDs: -1}}, nil, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.CheckSpec(tt.spec)
			if tt.text == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.text) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("CheckSpec: %v; want %v containing %q", err, tt.wantErr, tt.text)
			}
		})
	}
}

// detectOr returns the machine's cgroup layout, or skips (fails under CI) where it lacks a
// controller.
func detectOr(t *testing.T) *cgroup.Layout {
	if cg, err := cgroup.Detect(); err == nil && cg.Has(cgroup.Memory) && cg.Has(cgroup.PIDs) && cg.Has(cgroup.CPU) {
		return cg
	}
	sandboxtest.Unavailable(t, "this machine lacks a memory, pids or cpu cgroup controller")
	return nil
}

// TestSandboxArgs: the namespaces and mounts every sandbox gets, and what it must not get.
func TestSandboxArgs(t *testing.T) {
	b := &Backend{binary: "/opt/agentd", features: features{disableUserns: true, size: true}, system: systemArgs()}
	args, err := b.sandboxArgs("/data/sb/x", "/workspace", sandbox.Spec{Network: sandbox.NetworkNone, Limits: sandbox.Limits{MemoryBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" --unshare-user --uid 0 --gid 0 --disable-userns --cap-drop ALL --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup ",
		" --unshare-net ",
		" --ro-bind /usr /usr ",
		" --proc /proc --ro-bind /proc/sys /proc/sys --dev /dev --size 536870912 --tmpfs /tmp ",
		" --bind /dev/shm/workspace /workspace --ro-bind /dev/shm/agentd /.agentd/agentd --remount-ro / --chdir /workspace ",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("arguments lack %q:\n%s", want, joined)
		}
	}
	for _, bad := range []string{"--die-with-parent", "/etc/shadow", "--ro-bind /etc /etc", "--bind / "} {
		if strings.Contains(joined, bad) {
			t.Errorf("arguments hold %q:\n%s", bad, joined)
		}
	}
	args, err = b.sandboxArgs("/d", "/w", sandbox.Spec{Network: sandbox.NetworkHost})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(args, "--unshare-net") || slices.Contains(args, "--size") {
		t.Errorf("a sandbox with network and no memory limit got %q", args)
	}
}

func TestRootfsArgs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr", "etc", "proc", "dev", "tmp", ".agentd"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := rootfsArgs(root, "/staged")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--symlink", "usr/bin", "/bin",
		"--ro-bind", "/staged/etc", "/etc",
		"--ro-bind", "/staged/file", "/file",
		"--ro-bind", "/staged/usr", "/usr",
	}
	if !slices.Equal(args, want) {
		t.Fatalf("rootfsArgs:\n got %q\nwant %q", args, want)
	}
}

// startTest starts a sandbox of spec on b and destroys it at cleanup.
func startTest(t *testing.T, b *Backend, spec sandbox.Spec) (sandbox.Instance, string) {
	t.Helper()
	key := sandboxtest.NewKey()
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), Spec: spec, SessionKey: key})
	return inst, key
}

// TestFreezerHold: the first pause takes the freezer hold, an empty group beside the
// backend's cgroup parent that stays frozen through the sandbox's resume, is no sandbox to
// List, and goes at Close. On a v2 freezer there is none.
func TestFreezerHold(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	ctx := context.Background()
	hold, err := b.cg.Group(b.FreezerHold())
	if err != nil {
		t.Fatal(err)
	}
	inst, key := startTest(t, b, sandboxtest.RuntimeSpec("s"))
	if hold.Exists() {
		t.Fatal("the freezer is held before any pause")
	}
	if err := b.Pause(ctx, inst); err != nil {
		t.Fatal(err)
	}
	v1 := b.cg.FreezerVersion() == "v1"
	if frozen, err := hold.Frozen(); v1 && (err != nil || !frozen) {
		t.Fatalf("after a pause the hold is frozen %v (%v), want frozen", frozen, err)
	}
	if err := b.Resume(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if res := runIn(t, client(t, inst, key), "echo thawed"); res.Output != "thawed\n" {
		t.Fatalf("command after resume: %+v", res)
	}
	if frozen, err := hold.Frozen(); v1 && (err != nil || !frozen) {
		t.Fatalf("after the resume the hold is frozen %v (%v), want frozen", frozen, err)
	}
	if !v1 && hold.Exists() {
		t.Fatal("a hold exists on a v2 freezer")
	}
	insts, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 1 || insts[0].ID != inst.ID {
		t.Fatalf("List: %+v, want only %s", insts, inst.ID)
	}
	if err := b.Destroy(ctx, inst); err != nil {
		t.Fatal(err)
	}
	closeReleases(t, b, hold)
}

// closeReleases closes b and fails the test if the freezer hold is still there.
func closeReleases(t *testing.T, b *Backend, hold *cgroup.Group) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if hold.Exists() {
		t.Fatal("the freezer hold is left after Close")
	}
}

// TestFreezerHoldLeftBehind: a backend that pauses nothing still removes, at Close, the hold a
// killed server on its root left frozen.
func TestFreezerHoldLeftBehind(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	if err := b.cg.HoldFreezer(context.Background(), b.FreezerHold()); err != nil {
		t.Fatal(err)
	}
	hold, err := b.cg.Group(b.FreezerHold())
	if err != nil {
		t.Fatal(err)
	}
	closeReleases(t, b, hold)
}

// TestRecordedCgroupMustBeOwn: a recorded cgroup that is not the sandbox's own is refused,
// not destroyed, so a damaged record cannot point Destroy at someone else's processes.
func TestRecordedCgroupMustBeOwn(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	for _, cg := range []string{"agentd/x/someone-else", "system.slice/mine"} {
		st := instanceState{Cgroup: cg}
		if err := b.Destroy(context.Background(), sandbox.Instance{ID: "mine", State: st.encode()}); err == nil {
			t.Errorf("destroy of sandbox mine with cgroup %s succeeded", cg)
		}
	}
}

// TestListFindsOrphanCgroup: a cgroup under the backend's parent without a directory (a start
// cut short) is listed, so reconciliation removes it, and Destroy does.
func TestListFindsOrphanCgroup(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	ctx := context.Background()
	g, err := b.cg.Group(b.cgParent + "/orphan")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Destroy(ctx); err != nil {
			t.Errorf("cleanup: remove the orphan cgroup: %v", err)
		}
	})
	if err := g.Create(cgroup.Limits{}); err != nil {
		t.Fatal(err)
	}
	insts, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(insts, func(inst sandbox.Instance) bool { return inst.ID == "orphan" })
	if i < 0 {
		t.Fatalf("List does not find the orphan cgroup: %+v", insts)
	}
	if got, err := b.Inspect(ctx, insts[i]); err != nil || got != sandbox.StateGone {
		t.Fatalf("inspect an empty cgroup: %s, %v", got, err)
	}
	if err := b.Destroy(ctx, insts[i]); err != nil {
		t.Fatal(err)
	}
	if g.Exists() {
		t.Fatal("the orphan cgroup is still there")
	}
}

// TestHardening: inside a sandbox the root user has no capabilities, cannot create user
// namespaces, cannot write /proc/sys, the root or system directories, does not see the
// server's environment or bwrap's arguments, nor the runtime's; /tmp is private and writable,
// and the workspace is nosuid and nodev. What it writes there belongs to the sandbox uid.
func TestHardening(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	b := newTestBackend(t, testRoot(t))
	inst, key := startTest(t, b, sandboxtest.RuntimeSpec("s"))
	c := client(t, inst, key)
	tests := []struct{ command, want string }{
		{"id -u", "0"},
		{"grep CapEff /proc/self/status", "CapEff:\t0000000000000000"},
		{"{ cat /proc/sys/kernel/printk_ratelimit > /proc/sys/kernel/printk_ratelimit; } 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /x 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /usr/x 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /etc/x 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /.agentd/agentd 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /.agentd/x 2>/dev/null && echo writable || echo read-only", "read-only"},
		// The workspace is the only writable host directory: the runtime's socket is bound
		// outside and inherited, so nothing else of the host is mounted writable.
		{"awk '$4 ~ /^rw/ && $3 !~ /^(tmpfs|proc|devtmpfs|mqueue|devpts|sysfs)$/ {print $2}' /proc/mounts | sort | tr '\\n' ' '", "/workspace"},
		{"touch /tmp/x && echo writable", "writable"},
		{"test -e /etc/shadow && echo visible || echo hidden", "hidden"},
		{"env | grep -c OPENAI_API_KEY", "0"},
		{"test -r /etc/os-release && test -r /etc/passwd && date > /dev/null && echo ok", "ok"},
		{"tr '\\0' ' ' < /proc/1/cmdline", b.bwrap + " --args 4 -- " + runtimeBinary + " runtime --listen fd:5 --workspace /workspace --sandbox-id " + inst.ID + " --key-fd 3"},
		{"hostname", hostname},
		// bwrap mounts the workspace nosuid and nodev.
		{"awk '$2 == \"/workspace\" {print $4}' /proc/mounts | tr , '\\n' | grep -xE 'nosuid|nodev' | sort | tr '\\n' ' '", "nodev nosuid"},
		// The runtime (pid 2) is not dumpable: its environment and descriptors are not for
		// the commands it runs.
		{"cat /proc/2/environ > /dev/null 2>&1 && echo readable || echo denied", "denied"},
		{"readlink /proc/2/fd/1 > /dev/null 2>&1 && echo readable || echo denied", "denied"},
		{"(echo forged >> /proc/2/fd/1) 2>/dev/null && echo written || echo denied", "denied"},
	}
	if b.features.disableUserns {
		tests = append(tests, struct{ command, want string }{"unshare -U true 2>/dev/null && echo allowed || echo refused", "refused"})
	}
	for _, tt := range tests {
		res := runIn(t, c, tt.command)
		if tt.want != "" && strings.TrimSpace(res.Output) != tt.want {
			t.Errorf("%s: %q, want %q", tt.command, res.Output, tt.want)
		}
	}
	runIn(t, c, "mkdir made && touch made/file")
	for _, p := range []string{inst.HostWorkspace, inst.HostWorkspace + "/made", inst.HostWorkspace + "/made/file"} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != b.uid || int(st.Gid) != b.uid {
			t.Errorf("%s belongs to %d:%d on the host, want the sandbox uid %d", p, st.Uid, st.Gid, b.uid)
		}
	}
}

// TestRootfs: a sandbox on a rootfs directory sees that directory's top level (here the
// host's own root, the one rootfs every machine has), read-only, with its own /proc, /dev
// and /tmp and the workspace on top.
func TestRootfs(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	spec := sandboxtest.RuntimeSpec("rootfs")
	spec.Rootfs = "/"
	spec.WorkingDir = "/srv/agentd-test-workspace"
	if _, err := os.Stat("/srv"); err == nil {
		spec.WorkingDir = "/agentd-test-workspace" // /srv would be read-only without it
	}
	inst, key := startTest(t, b, spec)
	c := client(t, inst, key)
	if res := runIn(t, c, "pwd; touch ws-file && echo ok"); res.Output != spec.WorkingDir+"\nok\n" {
		t.Fatalf("workspace: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(inst.HostWorkspace, "ws-file")); err != nil {
		t.Fatalf("the file written in the workspace is not on the host: %v", err)
	}
	if res := runIn(t, c, "test -d /var && test -d /etc && touch /var/x 2>/dev/null || echo read-only"); res.Output != "read-only\n" {
		t.Fatalf("rootfs: %+v", res)
	}
}

// TestRootInStageDir: a data directory (and runtime binary) below the directory the
// sandbox's mounts are staged on (/dev/shm, where a tmpfs data directory may well be) still
// gives a working sandbox: the staging tmpfs must not hide what it binds.
func TestRootInStageDir(t *testing.T) {
	if err := checkStageDir(); err != nil {
		t.Skipf("no %s here: %v", stageDir, err)
	}
	root := testRootIn(t, stageDir)
	bin := filepath.Join(root, "agentd-runtime")
	data, err := os.ReadFile(sandboxtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newTestBackendOf(t, root, bin)
	inst, key := startTest(t, b, sandboxtest.RuntimeSpec("stage"))
	c := client(t, inst, key)
	if res := runIn(t, c, "echo hi > f && cat f"); res.Output != "hi\n" {
		t.Fatalf("workspace: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(inst.HostWorkspace, "f")); err != nil {
		t.Fatalf("the file written in the workspace is not on the host: %v", err)
	}
}

// TestBareRun: the floor of the benchmark has the network of a sandbox: with egress, the
// interface of slirp4netns is up before the command runs; with none, there is only loopback.
func TestBareRun(t *testing.T) {
	b := newTestBackend(t, testRoot(t))
	ctx := context.Background()
	if err := b.BareRun(ctx, sandbox.NetworkEgress, "/bin/sh", "-c", "grep -q tap0 /proc/net/dev"); err != nil {
		t.Fatalf("bare bwrap with egress: %v", err)
	}
	if err := b.BareRun(ctx, sandbox.NetworkNone, "/bin/sh", "-c", "! grep -q tap0 /proc/net/dev && grep -q lo /proc/net/dev"); err != nil {
		t.Fatalf("bare bwrap without network: %v", err)
	}
	sandboxtest.CheckNoChildren(t)
}
