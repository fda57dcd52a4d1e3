package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary serve as the sandboxes' runtime (see sandboxtest).
func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }

// shortRoot returns a fresh root directory short enough for unix socket paths (t.TempDir
// paths grow with the test name).
func shortRoot(t testing.TB) string { return sandboxtest.ShortDir(t) }

func newTestBackend(t testing.TB, root string) *Backend {
	t.Helper()
	b, err := New(Options{
		Root:   root,
		Binary: sandboxtest.Binary(t),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestConformance(t *testing.T) {
	root := shortRoot(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newTestBackend(t, root) }, sandboxtest.Options{
		Spec: sandboxtest.RuntimeSpec("test"),
		Unsupported: []sandboxtest.SpecChange{
			{Name: "NetworkNone", Apply: func(s *sandbox.Spec) { s.Network = sandbox.NetworkNone }},
			{Name: "Memory", Apply: func(s *sandbox.Spec) { s.Limits.MemoryBytes = 1 << 30 }},
			{Name: "PIDs", Apply: func(s *sandbox.Spec) { s.Limits.PIDs = 100 }},
			{Name: "Rootfs", Apply: func(s *sandbox.Spec) { s.Rootfs = "/srv/rootfs" }},
			{Name: "Image", Apply: func(s *sandbox.Spec) { s.Image = "ubuntu:24.04" }},
		},
		Leftovers: sessionLeftovers,
	})
	sandboxtest.CheckNoChildren(t)
}

// sessionLeftovers lists the live processes of the sandbox's session and its directory.
func sessionLeftovers(inst sandbox.Instance) []string {
	var left []string
	st, ok, err := decodeState(inst)
	if err != nil {
		return []string{err.Error()}
	}
	if ok {
		members, err := sessionMembers(st.PID)
		if err != nil {
			return []string{err.Error()}
		}
		for _, p := range members {
			left = append(left, fmt.Sprintf("process %d of session %d", p.PID, st.PID))
		}
	}
	if _, err := os.Stat(filepath.Dir(inst.HostWorkspace)); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "directory "+filepath.Dir(inst.HostWorkspace))
	}
	return left
}

func TestNewNeedsRootAndBinary(t *testing.T) {
	if _, err := New(Options{Binary: "/bin/true"}); err == nil {
		t.Fatal("New without a root succeeded")
	}
	if _, err := New(Options{Root: t.TempDir()}); err == nil {
		t.Fatal("New without a binary succeeded")
	}
}

func TestCheckSpec(t *testing.T) {
	tests := []struct {
		name    string
		spec    sandbox.Spec
		wantErr error
		text    string
	}{
		{"plain", sandbox.Spec{}, nil, ""},
		{"host network", sandbox.Spec{Network: sandbox.NetworkHost}, nil, ""},
		{"no network", sandbox.Spec{Network: sandbox.NetworkNone}, sandbox.ErrUnsupported, `network "none"`},
		{"cpus", sandbox.Spec{Limits: sandbox.Limits{CPUs: 1}}, sandbox.ErrUnsupported, "resource limits"},
		{"several", sandbox.Spec{Image: "x", Rootfs: "/r"}, sandbox.ErrUnsupported, "rootfs and image"},
		{"unknown network", sandbox.Spec{Network: "bridge"}, nil, "unknown network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSpec(tt.spec)
			if tt.text == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.text) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("checkSpec: %v; want %v containing %q", err, tt.wantErr, tt.text)
			}
		})
	}
}

func TestBadIDs(t *testing.T) {
	b := newTestBackend(t, shortRoot(t))
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "a/b", "../x"} {
		if _, err := b.Start(ctx, sandbox.StartRequest{ID: id, SessionKey: "k", Spec: sandboxtest.RuntimeSpec("s")}); err == nil {
			t.Errorf("start with id %q succeeded", id)
		}
		if err := b.Destroy(ctx, sandbox.Instance{ID: id}); err == nil {
			t.Errorf("destroy with id %q succeeded", id)
		}
	}
}

// TestStartKeepsExistingDirectory: a start never takes over, or removes, a directory it did
// not create.
func TestStartKeepsExistingDirectory(t *testing.T) {
	root := shortRoot(t)
	b := newTestBackend(t, root)
	keep := filepath.Join(root, "taken", "keep")
	if err := os.MkdirAll(keep, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(context.Background(), sandbox.StartRequest{ID: "taken", SessionKey: "k", Spec: sandboxtest.RuntimeSpec("s")}); err == nil {
		t.Fatal("start over an existing directory succeeded")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("existing directory damaged: %v", err)
	}
}

// TestStartFailureLeavesNothing: a command that cannot run leaves no directory.
func TestStartFailureLeavesNothing(t *testing.T) {
	root := shortRoot(t)
	b := newTestBackend(t, root)
	spec := sandbox.Spec{Command: []string{filepath.Join(root, "no-such-binary")}}
	if _, err := b.Start(context.Background(), sandbox.StartRequest{ID: "x", SessionKey: "k", Spec: spec}); err == nil {
		t.Fatal("start of a missing binary succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory left after a failed start: %v", err)
	}
}

func TestStartNeedsKey(t *testing.T) {
	b := newTestBackend(t, shortRoot(t))
	if _, err := b.Start(context.Background(), sandbox.StartRequest{ID: "x", Spec: sandboxtest.RuntimeSpec("s")}); err == nil {
		t.Fatal("start without a session key succeeded")
	}
}

// TestRuntimeEnvironment: the runtime gets a fixed environment, never the server's, and not
// its session key either (that comes through a pipe).
func TestRuntimeEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	b := newTestBackend(t, shortRoot(t))
	env := b.env("/ws", sandbox.StartRequest{SessionKey: "key", Spec: sandbox.Spec{InitialEnv: map[string]string{"B": "2", "A": "1"}}})
	want := []string{"PATH=" + DefaultPath, "HOME=/ws", "LANG=C.UTF-8", "TERM=xterm-256color", "A=1", "B=2"}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Fatalf("env %q, want %q", env, want)
	}
}

func TestInspectWithoutState(t *testing.T) {
	b := newTestBackend(t, shortRoot(t))
	ctx := context.Background()
	got, err := b.Inspect(ctx, sandbox.Instance{ID: "x"})
	if err != nil || got != sandbox.StateGone {
		t.Fatalf("inspect: %s, %v", got, err)
	}
	// A pid that now belongs to another process (start time differs) is gone too.
	self := instanceState{PID: os.Getpid(), StartTime: 1}
	got, err = b.Inspect(ctx, sandbox.Instance{ID: "x", State: self.encode()})
	if err != nil || got != sandbox.StateGone {
		t.Fatalf("inspect of a recycled pid: %s, %v", got, err)
	}
	if err := b.Pause(ctx, sandbox.Instance{ID: "x", State: self.encode()}); err == nil {
		t.Fatal("pause of a recycled pid succeeded")
	}
}

// TestReaper: a runtime that exits by itself is reaped, not left a zombie; after Close it is
// left alone.
func TestReaper(t *testing.T) {
	b := newTestBackend(t, shortRoot(t))
	ctx := context.Background()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: "reaped", SessionKey: "k", Spec: sandboxtest.RuntimeSpec("s")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), inst) })
	st, _, err := decodeState(inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := hostproc.ReadStat(st.PID); errors.Is(err, hostproc.ErrNoProcess) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exited runtime was not reaped")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if got, err := b.Inspect(ctx, inst); err != nil || got != sandbox.StateGone {
		t.Fatalf("inspect: %s, %v", got, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPauseWhileForking: a session that forks all the time (a loop running short commands)
// still freezes completely: a child forked in the moment its parent is stopped is caught too.
func TestPauseWhileForking(t *testing.T) {
	b := newTestBackend(t, shortRoot(t))
	ctx := context.Background()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: "forky", Spec: sandboxtest.RuntimeSpec("s"), SessionKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), inst) })
	c, err := runtime.NewClient(inst.Endpoint, "k")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Alive(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("runtime never answered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.Run(ctx, runtime.CommandRequest{Command: `nohup sh -c 'while :; do /bin/true; /bin/true & done' >/dev/null 2>&1 &`}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for i := 0; i < 10; i++ {
		start := time.Now()
		if err := b.Pause(ctx, inst); err != nil {
			t.Fatalf("pause %d of a forking session: %v", i, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("pause %d took %v", i, d)
		}
		if st, err := b.Inspect(ctx, inst); err != nil || st != sandbox.StatePaused {
			t.Fatalf("after pause %d: %v, %v", i, st, err)
		}
		if err := b.Resume(ctx, inst); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
