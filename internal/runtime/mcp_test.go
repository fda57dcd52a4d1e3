package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	os.Exit(m.Run())
}

func mcpClient(t *testing.T) *runtimeclient.Client {
	t.Helper()
	hs, _ := newTestServer(t, append(os.Environ(), "AGENTD_MCPTEST_LEAK=1"))
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func selfServer(t *testing.T, name, mode string) mcp.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: name, Transport: mcp.Stdio, Command: exe, Env: map[string]string{mcptest.ModeEnv: mode}}
}

func mcpText(r mcp.CallResult) string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func TestMCPRoutes(t *testing.T) {
	c := mcpClient(t)
	ctx := context.Background()
	_, shttp := mcptest.HTTP(t, "k3y")
	st, err := c.ConfigureMCP(ctx, "conv1", runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{
		selfServer(t, "local", "stdio"),
		selfServer(t, "broken", "crash"),
		{Name: "remote", Transport: mcp.SHTTP, URL: shttp, APIKey: "k3y", TimeoutSeconds: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]mcp.ServerStatus{}
	for _, s := range st.Servers {
		status[s.Name] = s
	}
	if status["local"].Error != "" || status["remote"].Error != "" || status["local"].Tools == 0 {
		t.Errorf("servers = %+v", st.Servers)
	}
	if !strings.Contains(status["broken"].Error, "crashing on purpose") {
		t.Errorf("broken server's reason = %q", status["broken"].Error)
	}

	res, err := c.CallMCP(ctx, "conv1", "local", "echo", json.RawMessage(`{"text":"hello"}`))
	if err != nil || mcpText(res) != "hello" {
		t.Errorf("local echo = %+v, %v", res, err)
	}
	res, err = c.CallMCP(ctx, "conv1", "local", "echo", json.RawMessage(`{"env":"AGENTD_MCPTEST_LEAK"}`))
	if err != nil || !strings.Contains(mcpText(res), "set=false") {
		t.Errorf("the stdio server saw the runtime's environment: %+v, %v", res, err)
	}
	// The server's own timeout bounds its calls.
	res, err = c.CallMCP(ctx, "conv1", "remote", "hang", nil)
	if err != nil || !res.IsError || !strings.Contains(mcpText(res), "timed out") {
		t.Errorf("remote hang = %+v, %v", res, err)
	}
	res, err = c.CallMCP(ctx, "conv1", "remote", "sum", json.RawMessage(`{"a":1,"b":2}`))
	if err != nil || string(res.Structured) != `{"sum":3}` {
		t.Errorf("remote sum = %+v, %v", res, err)
	}
	if res, err := c.CallMCP(ctx, "conv1", "local", "echo", json.RawMessage(`{not json`)); err != nil || !res.IsError {
		t.Errorf("malformed arguments: %+v, %v", res, err)
	}

	var se *runtimeclient.StatusError
	if _, err := c.CallMCP(ctx, "conv1", "nobody", "echo", nil); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("call to an unknown server: %v", err)
	}
	if _, err := c.MCPState(ctx, "other"); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("state of a conversation without servers: %v", err)
	}
	if _, err := c.ConfigureMCP(ctx, "conv1", runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{{Name: "bad name", Transport: mcp.Stdio, Command: "x"}}}); !errors.As(err, &se) || se.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a bad server: %v", err)
	}

	pid, err := c.CallMCP(ctx, "conv1", "local", "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(mcpText(pid))
	if err != nil {
		t.Fatalf("pid answer %+v", pid)
	}
	if closed, err := c.CloseToolSession(ctx, "conv1"); err != nil || !closed {
		t.Fatalf("close tool session: %v, %v", closed, err)
	}
	if err := syscall.Kill(n, 0); err == nil {
		t.Errorf("stdio server %d still runs after its conversation's session closed", n)
	}
	if _, err := c.MCPState(ctx, "conv1"); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("state after close: %v", err)
	}
}

// TestMCPChanges: the state's generation is its ETag. Looking for changes costs no listing
// while there are none, and tries no failed server again; a server's list_changed makes the
// next look list its tools again, the added one among them.
func TestMCPChanges(t *testing.T) {
	hs, ws := newTestServer(t, os.Environ())
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Every start of the failing server leaves a line in its file.
	failing := mcp.Server{Name: "failing", Transport: mcp.Stdio, Command: "/bin/sh", Args: []string{"-c", "echo start >> starts; exit 3"}}
	starts := func() int {
		b, _ := os.ReadFile(ws + "/starts")
		return strings.Count(string(b), "start")
	}
	st, err := c.ConfigureMCP(ctx, "conv", runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{selfServer(t, "local", "stdio"), failing}})
	if err != nil {
		t.Fatal(err)
	}
	if starts() != 1 {
		t.Fatalf("the failing server started %d times for one configuration", starts())
	}
	// The SDK's servers announce the tools they were made with once a session starts, so the
	// generation may move once after the configuration: look until it holds still.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, changed, err := c.MCPChanges(ctx, "conv", st.Generation)
		if err != nil {
			t.Fatal(err)
		}
		if !changed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the generation never held still")
		}
		st = got
	}
	// Far from the current one: a late announcement may still move it by one meanwhile.
	if _, changed, err := c.MCPChanges(ctx, "conv", st.Generation+1000); err != nil || !changed {
		t.Fatalf("changes since another generation: changed=%v, %v", changed, err)
	}
	if starts() != 1 {
		t.Errorf("looking for changes started the failing server again (%d starts)", starts())
	}

	if res, err := c.CallMCP(ctx, "conv", "local", "add_tool", json.RawMessage(`{"name":"late"}`)); err != nil || res.IsError {
		t.Fatalf("add_tool: %+v, %v", res, err)
	}
	// The notification comes on its own; the bound only ends a test that would never pass.
	deadline = time.Now().Add(30 * time.Second)
	for {
		got, changed, err := c.MCPChanges(ctx, "conv", st.Generation)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, tl := range got.Tools {
			names[tl.Server+"/"+tl.Name] = true
		}
		if changed && !names["local/late"] && names["local/echo"] && got.Generation > st.Generation {
			// A late announcement of an earlier change, not the tool's: wait on from there.
			st = got
			continue
		}
		if changed {
			if !names["local/late"] || !names["local/echo"] || got.Generation <= st.Generation {
				t.Fatalf("after list_changed: generation %d, tools %v", got.Generation, names)
			}
			for _, s := range got.Servers {
				if s.Name == "failing" && s.Error == "" {
					t.Errorf("the failing server's reason is lost: %+v", s)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no change seen 30 s after the server added a tool")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if starts() != 1 {
		t.Errorf("looking for changes started the failing server again (%d starts)", starts())
	}
	// A full state tries it again.
	if _, err := c.MCPState(ctx, "conv"); err != nil {
		t.Fatal(err)
	}
	if starts() != 2 {
		t.Errorf("the full state started the failing server %d times in all, want 2", starts())
	}
	if status, body := do(t, "GET", hs.URL+"/api/mcp/conv", http.Header{"X-Session-API-Key": {testKey}, "If-None-Match": {"soon"}}, ""); status != http.StatusBadRequest {
		t.Errorf("a bad If-None-Match: %d %s", status, body)
	}
}
