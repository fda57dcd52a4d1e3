package sandboxtest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// testStartAndAuth: the runtime answers with the session key and refuses without it.
func (s *suite) testStartAndAuth(t *testing.T) {
	b := s.newBackend(t)
	bx := s.start(t, b, s.spec())
	ctx := context.Background()

	id, err := bx.client.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.SandboxID != bx.inst.ID || id.Workspace != bx.inst.Workspace {
		t.Fatalf("identity %+v; want sandbox %s, workspace %s", id, bx.inst.ID, bx.inst.Workspace)
	}

	wrong, err := NewClient(b, bx.inst, "not-the-key")
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.CloseIdleConnections()
	var se *runtimeclient.StatusError
	if _, err := wrong.Identity(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("identity with a wrong key: %v, want 401", err)
	}
	if _, err := wrong.Run(ctx, runtimeclient.CommandRequest{Command: "true"}); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("command with a wrong key: %v, want 401", err)
	}

	req, err := bx.client.NewRequest(ctx, http.MethodGet, "/api/identity", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Del(runtimeclient.HeaderSessionKey)
	resp, err := bx.client.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("identity without a key: %d, want 401", resp.StatusCode)
	}
	if err := wrong.Alive(ctx); err != nil {
		t.Fatalf("alive needs no key: %v", err)
	}
	inspect(t, b, bx.inst, "running")
}

// testCommands: exit codes, output, the workspace as working directory.
func (s *suite) testCommands(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	tests := []struct {
		command string
		want    runtimeclient.CommandResult
	}{
		{"echo hello", runtimeclient.CommandResult{Output: "hello\n"}},
		{"pwd", runtimeclient.CommandResult{Output: bx.inst.Workspace + "\n"}},
		{"echo out; echo err >&2; exit 7", runtimeclient.CommandResult{ExitCode: 7, Output: "out\nerr\n"}},
		{"false", runtimeclient.CommandResult{ExitCode: 1}},
		{"echo ${" + runtimeclient.KeyEnv + ":-no key}", runtimeclient.CommandResult{Output: "no key\n"}},
	}
	for _, tt := range tests {
		if got := run(t, bx.client, tt.command); got != tt.want {
			t.Errorf("run %q: %+v, want %+v", tt.command, got, tt.want)
		}
	}
}

// testFiles: a file written by a command reads back, also from the host where there is a
// host workspace.
func (s *suite) testFiles(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	if res := run(t, bx.client, "mkdir -p d && printf 'hello file' > d/note.txt"); res.ExitCode != 0 {
		t.Fatalf("write: %+v", res)
	}
	if res := run(t, bx.client, "cat d/note.txt"); res.Output != "hello file" {
		t.Fatalf("read back: %+v", res)
	}
	if bx.inst.HostWorkspace == "" {
		return
	}
	got, err := os.ReadFile(filepath.Join(bx.inst.HostWorkspace, "d", "note.txt"))
	if err != nil || string(got) != "hello file" {
		t.Fatalf("read on the host: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(bx.inst.HostWorkspace, "from-host"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, bx.client, "cat from-host"); res.Output != "hi" {
		t.Fatalf("host file in the sandbox: %+v", res)
	}
}
