package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool/mcp"
)

// TestCredential: with a Credential, every process the runtime starts (a command, the
// terminal's shell, git) runs as its uid and gid, with no supplementary group. The runtime's
// own part, becomeSandboxUser, changes the credentials of every thread, which a test binary
// built with cgo (as -race builds are) cannot; the docker backend's tests run it.
func TestCredential(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("starting processes as another user needs root")
		}
		t.Skip("starting processes as another user needs root")
	}
	needBash(t)
	needGit(t)
	const uid = 2000000000
	ws := t.TempDir()
	// The other user must reach the workspace.
	for _, d := range []string{filepath.Dir(ws), ws} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewServer(ServerConfig{
		SandboxID:  "sb1",
		Workspace:  ws,
		SessionKey: testKey,
		Env:        []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ws},
		Credential: &syscall.Credential{Uid: uid, Gid: uid},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d\n%[1]d\n%[1]d\n", uid)

	res, err := c.Run(context.Background(), runtimeclient.CommandRequest{Command: "id -u; id -g; id -G"})
	if err != nil || res.Output != want {
		t.Errorf("a command's user, group and groups: %+v, %v; want %q", res, err, want)
	}
	tr := callTool(t, c, "terminal", "conv", map[string]any{"command": "id -u; id -g; id -G"})
	if !strings.Contains(tr.Text, want) {
		t.Errorf("the terminal's user, group and groups: %q, want %q in it", tr.Text, want)
	}
	req, err := http.NewRequest(http.MethodPost, hs.URL+runtimeclient.RouteBashExecute, strings.NewReader(`{"command": "id -u; id -g; id -G"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(runtimeclient.HeaderSessionKey, testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var bash runtimeclient.BashEvent
	err = json.NewDecoder(resp.Body).Decode(&bash)
	resp.Body.Close()
	if err != nil || bash.Stdout == nil || *bash.Stdout != want {
		t.Errorf("an out-of-band bash command's user, group and groups: %+v, %v; want %q", bash, err, want)
	}
	// An MCP stdio server that is no server at all still shows whom it started as: it fails
	// its handshake after writing its uid.
	_, err = c.ConfigureMCP(context.Background(), "conv", runtimeclient.MCPConfigureRequest{
		Servers:               []mcp.Server{{Name: "whoami", Transport: mcp.Stdio, Command: "sh", Args: []string{"-c", "id -u > mcp-uid"}}},
		ConnectTimeoutSeconds: 60,
	})
	if err != nil {
		t.Fatalf("configure an MCP server: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "mcp-uid")); err != nil || string(b) != fmt.Sprintf("%d\n", uid) {
		t.Errorf("an MCP stdio server's user: %q, %v", b, err)
	}
	// A shell alias shows whom git runs as.
	out, err := s.git(ws).run(context.Background(), "-c", "alias.whoami=!id -u", "whoami")
	if err != nil || string(out) != fmt.Sprintf("%d\n", uid) {
		t.Errorf("git's user: %q, %v", out, err)
	}
}
