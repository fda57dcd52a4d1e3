package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary serve as the sandboxes' runtime (see sandboxtest).
func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }

// env is a store, a process backend over a short root directory, and specs:
// "default" runs the runtime, "mute" runs a process that never answers.
type env struct {
	t     *testing.T
	root  string
	store *sandboxtest.MemStore
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "agentd-s")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, root: root, store: sandboxtest.NewMemStore()}
	// Registered first, as soon as the root exists, so it runs last and on any failure:
	// whatever a test left running (paused sandboxes too) is destroyed.
	t.Cleanup(func() {
		b := e.backend()
		insts, err := b.List(context.Background())
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, inst := range insts {
			if err := b.Destroy(context.Background(), inst); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		os.RemoveAll(root)
		sandboxtest.CheckNoChildren(t)
	})
	ctx := context.Background()
	must(t, e.store.PutSpec(ctx, sandboxtest.RuntimeSpec("default")))
	// sh -c 'sleep 30' takes the appended runtime flags as its positional arguments.
	must(t, e.store.PutSpec(ctx, sandbox.Spec{ID: "mute", Command: []string{"/bin/sh", "-c", "sleep 30", "--"}}))
	must(t, e.store.PutSpec(ctx, sandbox.Spec{ID: "offline", Network: sandbox.NetworkNone}))
	return e
}

func (e *env) backend() *process.Backend {
	b, err := process.New(process.Options{
		Root:   e.root,
		Binary: sandboxtest.Binary(e.t),
		Logger: testLogger(e.t),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { b.Close() })
	return b
}

func (e *env) service(b sandbox.Backend, mod func(*sandbox.ServiceOptions)) *sandbox.Service {
	opts := sandbox.ServiceOptions{
		Store:        e.store,
		Backend:      b,
		Sealer:       sandboxtest.Sealer{},
		Logger:       testLogger(e.t),
		DefaultSpec:  "default",
		StartTimeout: 20 * time.Second,
	}
	if mod != nil {
		mod(&opts)
	}
	s := sandbox.NewService(opts)
	e.t.Cleanup(func() { s.Close() })
	return s
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testContext bounds every call of a test, so that a call to a frozen runtime or a wait that
// never ends fails the test (and its cleanup runs) instead of hanging the package.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startRunning(t *testing.T, s *sandbox.Service, owner string) sandbox.Sandbox {
	t.Helper()
	ctx := testContext(t)
	sb, err := s.Start(ctx, owner, "")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	sb, err = s.WaitRunning(ctx, owner, sb.ID)
	if err != nil {
		t.Fatalf("wait running: %v", err)
	}
	return sb
}

func wantStateError(t *testing.T, err error, text string) {
	t.Helper()
	var se *sandbox.StateError
	if !errors.Is(err, sandbox.ErrState) || !errors.As(err, &se) {
		t.Fatalf("error %v, want a StateError", err)
	}
	if se.Error() != text {
		t.Fatalf("error text %q, want %q", se.Error(), text)
	}
}

func runtimePID(t *testing.T, sb sandbox.Sandbox) int {
	t.Helper()
	var st struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(sb.Instance.State, &st); err != nil || st.PID <= 0 {
		t.Fatalf("instance state %s: %v", sb.Instance.State, err)
	}
	return st.PID
}

// pidGone reports whether pid no longer runs (a zombie counts as gone).
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// waitFor polls cond until it holds, for at most 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServiceStartToRunning(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)

	started, err := s.Start(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if started.Status != sandbox.StatusStarting || started.SpecID != "default" || started.Backend != "process" ||
		len(started.ID) != 32 || started.Instance.Endpoint == "" {
		t.Fatalf("started record %+v", started)
	}
	sb, err := s.WaitRunning(ctx, "alice", started.ID)
	if err != nil || sb.Status != sandbox.StatusRunning {
		t.Fatalf("wait running: %+v, %v", sb, err)
	}

	key, err := s.SessionKey(ctx, "alice", sb.ID)
	if err != nil || key == "" {
		t.Fatalf("session key %q, %v", key, err)
	}
	if strings.Contains(string(sb.SessionKeySealed), key) {
		t.Fatal("the session key is stored unsealed")
	}
	c, err := s.Client(ctx, "alice", sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "pwd"})
	if err != nil || res.Output != sb.Instance.Workspace+"\n" {
		t.Fatalf("run: %+v, %v", res, err)
	}

	got, err := s.Get(ctx, "alice", sb.ID)
	if err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("get: %+v, %v", got, err)
	}
	many, err := s.GetMany(ctx, "alice", []string{sb.ID, "nope"})
	if err != nil || len(many) != 2 || many[0] == nil || many[0].ID != sb.ID || many[1] != nil {
		t.Fatalf("get many: %v, %v", many, err)
	}
	list, next, err := s.Search(ctx, "alice", paging.Query{})
	if err != nil || len(list) != 1 || list[0].ID != sb.ID || next != "" {
		t.Fatalf("search: %v %q %v", list, next, err)
	}
}

func TestServiceStartErrors(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)

	if _, err := s.Start(ctx, "alice", "nope"); !errors.Is(err, sandbox.ErrSpecNotFound) {
		t.Fatalf("unknown spec: %v", err)
	}
	// A spec the backend cannot honour is refused before anything is stored or started.
	if _, err := s.Start(ctx, "alice", "offline"); !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), "network") {
		t.Fatalf("unsupported spec: %v", err)
	}
	list, _, err := s.Search(ctx, "alice", paging.Query{})
	if err != nil || len(list) != 0 {
		t.Fatalf("an unsupported spec left records: %v, %v", list, err)
	}
	entries, err := os.ReadDir(e.root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("an unsupported spec left directories: %v", entries)
	}
}

// TestServiceStartFailed: a start the backend cannot carry out leaves the record in ERROR,
// saying why in the owner's words (no host path), and answers a *FailedError saying the same.
func TestServiceStartFailed(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	must(t, e.store.PutSpec(ctx, sandbox.Spec{ID: "broken", Command: []string{"/nonexistent/agentd-runtime"}}))
	s := e.service(e.backend(), nil)

	got, err := s.Start(ctx, "alice", "broken")
	var fe *sandbox.FailedError
	if !errors.Is(err, sandbox.ErrFailed) || !errors.As(err, &fe) || fe.Op != "start" || fe.ID != got.ID || got.ID == "" {
		t.Fatalf("start: %+v, %v; want a failed start of the record returned", got, err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/agentd-runtime") {
		t.Errorf("the error for the log %q does not name the cause", err)
	}
	want := "sandbox " + got.ID + " could not start: the process backend could not start the sandbox; the server log has the cause"
	if msg := fe.ClientMessage(); msg != want {
		t.Errorf("client message %q, want %q", msg, want)
	}
	stored, err := s.Get(ctx, "alice", got.ID)
	if err != nil || stored.Status != sandbox.StatusError || stored.Detail != fe.Detail || got.Status != sandbox.StatusError {
		t.Fatalf("stored %+v, %v (returned %s); want ERROR with the detail %q", stored, err, got.Status, fe.Detail)
	}
}

// TestServiceStartTimeout: while a sandbox starts, pause and resume are refused with a
// reason; a runtime that never answers ends in ERROR and is destroyed.
func TestServiceStartTimeout(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)

	// The refusals under the default timeout, which no busy machine reaches before them.
	patient := e.service(e.backend(), nil)
	sb, err := patient.Start(ctx, "alice", "mute")
	if err != nil {
		t.Fatal(err)
	}
	err = patient.Pause(ctx, "alice", sb.ID)
	wantStateError(t, err, "sandbox is STARTING; only a RUNNING sandbox can be paused")
	err = patient.Resume(ctx, "alice", sb.ID)
	wantStateError(t, err, "sandbox is STARTING; only a PAUSED sandbox can be resumed")
	_, err = patient.Client(ctx, "alice", sb.ID)
	wantStateError(t, err, "sandbox is STARTING; only a RUNNING sandbox can be reached")
	must(t, patient.Delete(ctx, "alice", sb.ID))

	// A short timeout: the runtime never answers, so the outcome is the same however slow.
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) { o.StartTimeout = 500 * time.Millisecond })
	sb, err = s.Start(ctx, "alice", "mute")
	if err != nil {
		t.Fatal(err)
	}
	pid := runtimePID(t, sb)
	got, err := s.WaitRunning(ctx, "alice", sb.ID)
	if !errors.Is(err, sandbox.ErrState) || got.Status != sandbox.StatusError || !strings.Contains(got.Detail, "did not answer") {
		t.Fatalf("wait running: %+v, %v", got, err)
	}
	waitFor(t, "the mute process to be killed", func() bool { return pidGone(pid) })
}

func TestServicePauseResume(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")

	// Resuming a running sandbox, and pausing a paused one, leave it as it is.
	must(t, s.Resume(ctx, "alice", sb.ID))

	must(t, s.Pause(ctx, "alice", sb.ID))
	if got, err := s.Get(ctx, "alice", sb.ID); err != nil || got.Status != sandbox.StatusPaused {
		t.Fatalf("after pause: %+v, %v", got, err)
	}
	must(t, s.Pause(ctx, "alice", sb.ID))
	if got, err := s.Get(ctx, "alice", sb.ID); err != nil || got.Status != sandbox.StatusPaused {
		t.Fatalf("after a second pause: %+v, %v", got, err)
	}
	_, err := s.Client(ctx, "alice", sb.ID)
	wantStateError(t, err, "sandbox is PAUSED; only a RUNNING sandbox can be reached")

	must(t, s.Resume(ctx, "alice", sb.ID))
	if got, err := s.Get(ctx, "alice", sb.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("after resume: %+v, %v", got, err)
	}
	c, err := s.Client(ctx, "alice", sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Alive(ctx); err != nil {
		t.Fatalf("runtime after resume: %v", err)
	}
}

// TestServiceResumeFailed: a paused sandbox whose runtime died meanwhile does not resume:
// the answer is a *FailedError saying so, the record reads MISSING, and it can be deleted.
func TestServiceResumeFailed(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil) // no Run: no watcher marks it MISSING first
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")
	pid := runtimePID(t, sb)
	must(t, s.Pause(ctx, "alice", sb.ID))
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the runtime to die", func() bool { return pidGone(pid) })

	err := s.Resume(ctx, "alice", sb.ID)
	var fe *sandbox.FailedError
	if !errors.Is(err, sandbox.ErrFailed) || !errors.As(err, &fe) || fe.Op != "resume" || fe.ID != sb.ID ||
		fe.ClientMessage() != "sandbox "+sb.ID+" could not resume: the process backend could not resume it; the server log has the cause; its processes are gone: delete it" {
		t.Fatalf("resume: %v (%+v); want a failed resume saying the processes are gone", err, fe)
	}
	if got, err := s.Get(ctx, "alice", sb.ID); err != nil || got.Status != sandbox.StatusMissing {
		t.Fatalf("after the failed resume: %+v, %v", got, err)
	}
	must(t, s.Delete(ctx, "alice", sb.ID))
}

// TestServiceTellsStatusChanges: OnStatus hears of each status change once it is stored, in
// order, and of a deletion as MISSING.
func TestServiceTellsStatusChanges(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var heard []string
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) {
		o.OnStatus = func(ctx context.Context, sb sandbox.Sandbox, _ sandbox.Status) {
			stored, err := e.store.GetSandbox(ctx, sb.OwnerID, sb.ID)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && stored.Status != sb.Status {
				t.Errorf("told %s while the store has %s", sb.Status, stored.Status)
			}
			heard = append(heard, string(sb.Status))
		}
	})
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")
	must(t, s.Pause(ctx, "alice", sb.ID))
	must(t, s.Pause(ctx, "alice", sb.ID)) // no change, nothing told
	must(t, s.Resume(ctx, "alice", sb.ID))
	must(t, s.Delete(ctx, "alice", sb.ID))
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"RUNNING", "PAUSED", "RUNNING", "MISSING"}; !slices.Equal(heard, want) {
		t.Fatalf("told %v, want %v", heard, want)
	}
}

func TestServiceLimit(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) { o.MaxRunningPerUser = 1 })
	ctx := testContext(t)
	first := startRunning(t, s, "alice")

	if _, err := s.Start(ctx, "alice", ""); !errors.Is(err, sandbox.ErrLimit) {
		t.Fatalf("start over the limit: %v", err)
	}
	startRunning(t, s, "bob") // the limit is per user

	// A paused sandbox does not count, a resumed one does.
	if err := s.Pause(ctx, "alice", first.ID); err != nil {
		t.Fatal(err)
	}
	startRunning(t, s, "alice")
	if err := s.Resume(ctx, "alice", first.ID); !errors.Is(err, sandbox.ErrLimit) {
		t.Fatalf("resume over the limit: %v", err)
	}
	if got, _ := s.Get(ctx, "alice", first.ID); got.Status != sandbox.StatusPaused {
		t.Fatalf("refused resume changed the status to %s", got.Status)
	}
}

// TestServiceOwners: one user never sees or touches another's sandbox.
func TestServiceOwners(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")

	checks := map[string]error{}
	_, checks["get"] = s.Get(ctx, "bob", sb.ID)
	checks["pause"] = s.Pause(ctx, "bob", sb.ID)
	checks["resume"] = s.Resume(ctx, "bob", sb.ID)
	_, checks["wait"] = s.WaitRunning(ctx, "bob", sb.ID)
	_, checks["key"] = s.SessionKey(ctx, "bob", sb.ID)
	_, checks["client"] = s.Client(ctx, "bob", sb.ID)
	checks["delete"] = s.Delete(ctx, "bob", sb.ID)
	for op, err := range checks {
		if !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("%s of another user's sandbox: %v, want ErrNotFound", op, err)
		}
	}
	if many, err := s.GetMany(ctx, "bob", []string{sb.ID}); err != nil || many[0] != nil {
		t.Fatalf("get many: %v, %v", many, err)
	}
	if list, _, err := s.Search(ctx, "bob", paging.Query{}); err != nil || len(list) != 0 {
		t.Fatalf("search: %v, %v", list, err)
	}
	if got, err := s.Get(ctx, "alice", sb.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("the owner's sandbox changed: %+v, %v", got, err)
	}
}

func TestServiceDelete(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), nil)
	ctx := testContext(t)

	sb := startRunning(t, s, "alice")
	pid := runtimePID(t, sb)
	must(t, s.Delete(ctx, "alice", sb.ID))
	if _, err := s.Get(ctx, "alice", sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if !pidGone(pid) {
		t.Fatal("the runtime runs after delete")
	}
	if _, err := os.Stat(filepath.Join(e.root, sb.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory after delete: %v", err)
	}
	if err := s.Delete(ctx, "alice", sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}

	// Deleting a sandbox that is still starting stops the wait for it.
	starting, err := s.Start(ctx, "alice", "mute")
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Delete(ctx, "alice", starting.ID))
	if !pidGone(runtimePID(t, starting)) {
		t.Fatal("a deleted starting sandbox still runs")
	}
	if _, err := s.WaitRunning(ctx, "alice", starting.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("wait for a deleted sandbox: %v", err)
	}
}

// TestServiceReconcile: a new service over the same store and directory (as after a restart)
// adopts live sandboxes, marks killed ones MISSING and destroys orphans.
func TestServiceReconcile(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	oldBackend := e.backend()
	old := e.service(oldBackend, nil)

	live := startRunning(t, old, "alice")
	paused := startRunning(t, old, "alice")
	if err := old.Pause(ctx, "alice", paused.ID); err != nil {
		t.Fatal(err)
	}
	frozenBehind := startRunning(t, old, "alice") // RUNNING in the store, frozen on the machine
	must(t, oldBackend.Pause(ctx, frozenBehind.Instance))
	killed := startRunning(t, old, "alice")
	orphan, err := oldBackend.Start(ctx, sandbox.StartRequest{ID: sandboxtest.NewID(), Spec: sandboxtest.RuntimeSpec("default"), SessionKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, old.Close())
	must(t, oldBackend.Close())

	killedPID := runtimePID(t, killed)
	must(t, syscall.Kill(killedPID, syscall.SIGKILL))
	waitFor(t, "the killed runtime to exit", func() bool { return pidGone(killedPID) })

	s := e.service(e.backend(), nil)
	must(t, s.Reconcile(ctx))

	for _, tt := range []struct {
		sb     sandbox.Sandbox
		status sandbox.Status
	}{
		{live, sandbox.StatusRunning},
		{paused, sandbox.StatusPaused},
		{frozenBehind, sandbox.StatusPaused},
		{killed, sandbox.StatusMissing},
	} {
		got, err := s.Get(ctx, "alice", tt.sb.ID)
		if err != nil || got.Status != tt.status {
			t.Errorf("after reconcile: %s is %s (%v), want %s", tt.sb.ID, got.Status, err, tt.status)
		}
	}
	if got, _ := s.Get(ctx, "alice", killed.ID); got.Detail != "sandbox processes are gone" {
		t.Errorf("detail of a killed sandbox: %q", got.Detail)
	}
	if _, err := os.Stat(filepath.Join(e.root, orphan.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan directory after reconcile: %v", err)
	}
	var orphanState struct {
		PID int `json:"pid"`
	}
	must(t, json.Unmarshal(orphan.State, &orphanState))
	if !pidGone(orphanState.PID) {
		t.Error("orphan runtime still runs after reconcile")
	}

	// The adopted sandboxes work under the new service.
	c, err := s.Client(ctx, "alice", live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo adopted"}); err != nil || res.Output != "adopted\n" {
		t.Fatalf("run in adopted sandbox: %+v, %v", res, err)
	}
	if err := s.Resume(ctx, "alice", paused.ID); err != nil {
		t.Fatalf("resume adopted sandbox: %v", err)
	}
	must(t, s.Delete(ctx, "alice", killed.ID))
}

// TestServiceReconcileStarting: a sandbox that was STARTING when the server stopped is
// health-checked on to RUNNING.
func TestServiceReconcileStarting(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	b := e.backend()
	key := "the-key"
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: sandboxtest.NewID(), Spec: sandboxtest.RuntimeSpec("default"), SessionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := sandboxtest.Sealer{}.Seal([]byte(key))
	must(t, e.store.CreateSandbox(ctx, sandbox.Sandbox{
		ID: inst.ID, OwnerID: "alice", SpecID: "default", Backend: "process", Status: sandbox.StatusStarting,
		SessionKeySealed: sealed, Instance: inst, CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}, 0))
	s := e.service(e.backend(), nil)
	must(t, s.Reconcile(ctx))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if sb, err := s.WaitRunning(wctx, "alice", inst.ID); err != nil || sb.Status != sandbox.StatusRunning {
		t.Fatalf("adopted starting sandbox: %+v, %v", sb, err)
	}
}

// TestServiceWatcher: Run marks a sandbox whose processes vanish MISSING, and stops on Close.
func TestServiceWatcher(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) { o.WatchInterval = 10 * time.Millisecond })
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	sb := startRunning(t, s, "alice")
	pid := runtimePID(t, sb)
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the sandbox to be MISSING", func() bool {
		got, err := s.Get(ctx, "alice", sb.ID)
		return err == nil && got.Status == sandbox.StatusMissing
	})
	// The backend reaps its runtime once the whole process has exited; a closed backend
	// would leave it a zombie.
	waitFor(t, "the killed runtime to be reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err != nil
	})

	must(t, s.Close())
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop within 20s of Close")
	}
	must(t, s.Close()) // twice is fine
	if err := s.Run(ctx); err != nil {
		t.Fatalf("Run after Close: %v", err)
	}
}

// TestServiceConcurrent: starts run in parallel, and pauses and resumes of one sandbox are
// serialised so that every call either succeeds or is refused for its status, and the record
// ends in step with the processes.
func TestServiceConcurrent(t *testing.T) {
	e := newEnv(t)
	b := e.backend()
	s := e.service(b, nil)
	ctx := testContext(t)

	ids := make(chan string, 4)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			sb, err := s.Start(ctx, "alice", "")
			if err == nil {
				_, err = s.WaitRunning(ctx, "alice", sb.ID)
			}
			ids <- sb.ID
			errs <- err
		}()
	}
	var first string
	for range 4 {
		id := <-ids
		must(t, <-errs)
		first = id
	}

	done := make(chan error, 16)
	for i := range 16 {
		go func() {
			var err error
			if i%2 == 0 {
				err = s.Pause(ctx, "alice", first)
			} else {
				err = s.Resume(ctx, "alice", first)
			}
			if errors.Is(err, sandbox.ErrState) {
				err = nil
			}
			done <- err
		}()
	}
	for range 16 {
		must(t, <-done)
	}
	sb, err := s.Get(ctx, "alice", first)
	must(t, err)
	state, err := b.Inspect(ctx, sb.Instance)
	must(t, err)
	want := map[sandbox.Status]sandbox.State{sandbox.StatusRunning: sandbox.StateRunning, sandbox.StatusPaused: sandbox.StatePaused}
	if want[sb.Status] != state {
		t.Fatalf("record says %s, processes are %s", sb.Status, state)
	}
}
