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

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
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
			{Name: "Rootfs", Apply: func(s *sandbox.Spec) { s.Rootfs = "/srv/rootfs" }},
			{Name: "Image", Apply: func(s *sandbox.Spec) { s.Image = "ubuntu:24.04" }},
		},
		Leftovers: func(inst sandbox.Instance) []string { return sessionLeftovers(root, inst) },
		New: func(root, binary string) (sandbox.Backend, error) {
			return New(Options{Root: root, Binary: binary})
		},
		SandboxDir: func(id string) string { return filepath.Join(root, id) },
		StartFailure: sandboxtest.StartFailure{
			Apply: func(s *sandbox.Spec) { s.Command = []string{"/nonexistent/agentd-no-such-binary"} },
			Cause: "/nonexistent/agentd-no-such-binary",
		},
		Env: func(inst sandbox.Instance) map[string]string {
			return map[string]string{"PATH": DefaultPath, "HOME": inst.Workspace, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
		},
	})
	sandboxtest.CheckNoChildren(t)
}

// sessionLeftovers lists the live processes of the sandbox's session and its directory in
// root.
func sessionLeftovers(root string, inst sandbox.Instance) []string {
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
	dir := filepath.Join(root, inst.ID)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "directory "+dir)
	}
	return left
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
		{"egress", sandbox.Spec{Network: sandbox.NetworkEgress}, nil, ""},
		{"limits, which the standing warning disowns", sandbox.Spec{Limits: sandbox.Limits{CPUs: 1, MemoryBytes: 1 << 30}}, nil, ""},
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
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), SessionKey: "k", Spec: sandboxtest.RuntimeSpec("s")})
	st, _, err := decodeState(inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exited runtime to be reaped", func() (bool, string) {
		p, err := hostproc.ReadStat(st.PID)
		if errors.Is(err, hostproc.ErrNoProcess) {
			return true, ""
		}
		return false, fmt.Sprintf("process %d: state %q, %v", st.PID, p.State, err)
	})
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
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), Spec: sandboxtest.RuntimeSpec("s"), SessionKey: "k"})
	st, _, err := decodeState(inst)
	if err != nil {
		t.Fatal(err)
	}
	c, err := runtimeclient.NewClient(inst.Endpoint, "k")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	waitFor(t, "the runtime to answer", func() (bool, string) {
		err := c.Alive(ctx)
		return err == nil, fmt.Sprint(err)
	})
	if _, err := c.Run(ctx, runtimeclient.CommandRequest{Command: `nohup sh -c 'while :; do /bin/true; /bin/true & done' >/dev/null 2>&1 &`}); err != nil {
		t.Fatal(err)
	}
	// forked reports whether the session has a process that is not in seen: the loop forks.
	forked := func(seen map[int]bool) (bool, string) {
		members, err := sessionMembers(st.PID)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range members {
			if !seen[p.PID] {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d processes, none new", len(members))
	}
	seen := map[int]bool{st.PID: true}
	waitFor(t, "the loop to fork", func() (bool, string) { return forked(seen) })
	for i := range 10 {
		if err := b.Pause(ctx, inst); err != nil {
			t.Fatalf("pause %d of a forking session: %v", i, err)
		}
		if state, err := b.Inspect(ctx, inst); err != nil || state != sandbox.StatePaused {
			t.Fatalf("after pause %d: %v, %v", i, state, err)
		}
		members, err := sessionMembers(st.PID)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range members {
			seen[p.PID] = true
			if !p.Stopped() && p.State != 'D' {
				t.Fatalf("after pause %d, process %d of the session is in state %c", i, p.PID, p.State)
			}
		}
		if err := b.Resume(ctx, inst); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("the loop to fork after resume %d", i), func() (bool, string) { return forked(seen) })
	}
}

// waitFor polls cond until it holds, failing t after a bound generous enough for a busy
// machine with what cond said last.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	const bound = time.Minute
	deadline := time.Now().Add(bound)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last seen: %s", bound, what, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
