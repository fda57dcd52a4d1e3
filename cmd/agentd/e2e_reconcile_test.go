package main_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// TestReconcileAfterRestart: at start-up a sandbox whose runtime died while the server was
// down reads MISSING, one whose runtime lives is adopted, and an orphan (a sandbox directory
// with a live runtime but no record) is destroyed.
func TestReconcileAfterRestart(t *testing.T) {
	t.Parallel()
	const key = "reconcile-admin-key-0123456789"
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + key}
	s := startServer(t, dir, env)
	admin := s.client(key)
	dead := admin.startSandbox().ID
	kept := admin.startSandbox().ID
	deadPID := runtimePID(t, dir, dead)
	if code, _ := s.stop(); code != 0 {
		t.Fatalf("server exited %d", code)
	}
	killAndReap(t, deadPID)
	orphan := startOrphan(t, dir, "e2e-orphan")

	s = startServer(t, dir, env)
	admin = s.client(key)
	// Reconciling happens before the server listens, so it is done by now.
	sb := admin.sandbox(dead)
	if sb.Status != "MISSING" || sb.SessionAPIKey != nil || sb.Detail == nil || !strings.Contains(*sb.Detail, "gone") {
		t.Errorf("sandbox whose runtime died: status %s, key %v, detail %s; want MISSING", sb.Status, sb.SessionAPIKey, deref(sb.Detail))
	}
	if sb := admin.sandbox(kept); sb.Status != "RUNNING" {
		t.Errorf("sandbox whose runtime lives: %s, want RUNNING", sb.Status)
	}
	if _, err := admin.runtimeClient(kept).Identity(t.Context()); err != nil {
		t.Errorf("adopted runtime: %v", err)
	}

	select {
	case <-orphan.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the orphan's runtime still runs after the restart")
	}
	if _, err := os.Stat(orphan.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan's directory is still there: %v", err)
	}
	if !strings.Contains(s.stderr.String(), "destroyed orphan sandbox") {
		t.Errorf("no word of the orphan in the log:\n%s", s.stderr)
	}

	// The MISSING sandbox keeps its directory until it is deleted.
	deadDir := filepath.Dir(socketPath(dir, dead))
	if _, err := os.Stat(deadDir); err != nil {
		t.Errorf("the MISSING sandbox's directory: %v", err)
	}
	admin.do("DELETE", "/api/v1/sandboxes/"+dead, nil, http.StatusOK, nil)
	if _, err := os.Stat(deadDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted sandbox's directory is still there: %v", err)
	}
	var got []*sandboxInfo
	admin.do("GET", "/api/v1/sandboxes?id="+dead, nil, http.StatusOK, &got)
	if len(got) != 1 || got[0] != nil {
		t.Errorf("deleted sandbox: %v, want [null]", got)
	}
}

type orphanRuntime struct {
	dir  string
	done chan struct{} // closed once the process has exited and been reaped
}

// startOrphan starts `agentd runtime` for a sandbox id the way the process backend would (in
// <data>/sandboxes/process/<id>/, in a session of its own), without any record of it, and
// waits until it answers.
func startOrphan(t *testing.T, dataDir, id string) orphanRuntime {
	t.Helper()
	o := orphanRuntime{dir: filepath.Dir(socketPath(dataDir, id)), done: make(chan struct{})}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agentdBin, "runtime", "--listen", "unix:"+socketPath(dataDir, id),
		"--workspace", filepath.Join(o.dir, "workspace"), "--sandbox-id", id)
	cmd.Env = testEnv(runtimeclient.KeyEnv + "=orphan-key")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(o.done)
	}()
	t.Cleanup(func() {
		select {
		case <-o.done:
			return
		default:
		}
		_ = cmd.Process.Kill()
		select {
		case <-o.done:
		case <-time.After(30 * time.Second):
			t.Errorf("orphan runtime %d still there", cmd.Process.Pid)
		}
	})
	rc, err := runtimeclient.NewClient("unix:"+socketPath(dataDir, id), "orphan-key")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.CloseIdleConnections()
	waitFor(t, 30*time.Second, "the orphan runtime to answer", func() (bool, string) {
		_, err := rc.Identity(t.Context())
		return err == nil, fmt.Sprint(err)
	})
	return o
}
