package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestRestartAfterKilledStart: a server killed in the middle of a sandbox start leaves a
// STARTING record without the backend's answer, while the backend may already run the
// sandbox. The next server removes that record and destroys what runs, instead of listing a
// MISSING sandbox forever; so it does with such records that older versions marked MISSING.
func TestRestartAfterKilledStart(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	kept := e.runningSandbox(alice)
	e.stop()

	ctx := context.Background()
	// The state the kill left: the backend started the sandbox, its answer was never stored.
	cut := sandboxtest.NewID()
	b := e.newBackend()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: cut, OwnerID: aliceID, Spec: sandbox.Spec{
		ID: "default", Command: []string{"agentd", "runtime"}, WorkingDir: "/workspace",
		InitialEnv: map[string]string{sandboxtest.EnvRuntime: "1"}, Network: sandbox.NetworkHost,
	}, SessionKey: sandboxtest.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(ctx, inst); b.Close() })
	socket := "unix:" + filepath.Join(e.sandboxDir(cut), "runtime.sock")
	// Start returns once the kernel has begun the exec; the new command line shows in /proc a
	// moment later.
	e.eventually("the runtime of the cut start to run", func() bool { return len(processesMatching(t, socket)) > 0 })
	old := sandboxtest.NewID() // an older version's leftover: MISSING, never had an instance
	st := e.inspectStore()
	now := time.Now().UTC()
	for _, r := range []sandbox.Sandbox{
		{ID: cut, OwnerID: aliceID, SpecID: "default", Backend: "process", Status: sandbox.StatusStarting, CreatedAt: now, UpdatedAt: now},
		{ID: old, OwnerID: aliceID, SpecID: "default", Backend: "process", Status: sandbox.StatusMissing, Detail: "sandbox processes are gone", CreatedAt: now, UpdatedAt: now},
	} {
		if err := st.CreateSandbox(ctx, r, 0); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	e.start()
	if got := e.sandboxIDList(alice); len(got) != 1 || got[0] != kept {
		t.Fatalf("sandboxes after the restart: %v, want only %s", got, kept)
	}
	for _, id := range []string{cut, old} {
		if sb := e.getSandbox(alice, id); sb != nil {
			t.Fatalf("sandbox %s after the restart: %+v, want no record", id, sb)
		}
	}
	if n := len(processesMatching(t, socket)); n != 0 {
		t.Fatalf("%d processes of the cut start still run", n)
	}
	if _, err := os.Stat(e.sandboxDir(cut)); !os.IsNotExist(err) {
		t.Fatalf("directory of the cut start: %v, want it removed", err)
	}
	if s := e.sandboxStatus(alice, kept); s != "RUNNING" {
		t.Fatalf("the sandbox that was running reads %s", s)
	}
}
