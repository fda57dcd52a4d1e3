package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	os.Exit(m.Run())
}

// stdio is a stdio server that is this test binary serving in mode.
func stdio(t *testing.T, name, mode string) mcp.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: name, Transport: mcp.Stdio, Command: exe, Env: map[string]string{mcptest.ModeEnv: mode}}
}

func newHub(t *testing.T, opts mcp.Options, servers ...mcp.Server) *mcp.Hub {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	h := mcp.NewHub(opts, nil)
	t.Cleanup(h.Close)
	if err := h.Configure(servers); err != nil {
		t.Fatal(err)
	}
	return h
}

func call(t *testing.T, h *mcp.Hub, server, tool, args string) mcp.CallResult {
	t.Helper()
	res, err := h.Call(context.Background(), server, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("call %s/%s: %v", server, tool, err)
	}
	return res
}

func text(r mcp.CallResult) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestHubThreeTransports(t *testing.T) {
	sse, shttp := mcptest.HTTP(t, "")
	_, shttpKeyed := mcptest.HTTP(t, "s3cret")
	h := newHub(t, mcp.Options{},
		stdio(t, "local", "stdio"),
		mcp.Server{Name: "remote_sse", Transport: mcp.SSE, URL: sse},
		mcp.Server{Name: "remote_http", Transport: mcp.SHTTP, URL: shttp},
		mcp.Server{Name: "keyed", Transport: mcp.SHTTP, URL: shttpKeyed, APIKey: "s3cret"},
	)
	st := h.State(context.Background())
	for _, s := range st.Servers {
		if s.Error != "" || s.Tools == 0 {
			t.Errorf("server %s: error %q, %d tools", s.Name, s.Error, s.Tools)
		}
	}
	seen := map[string]bool{}
	for _, tl := range st.Tools {
		seen[tl.Server+"/"+tl.Name] = true
		if tl.Name == "echo" && !bytes.Contains(tl.InputSchema, []byte(`"text"`)) {
			t.Errorf("echo's input schema lost its properties: %s", tl.InputSchema)
		}
		if tl.Name == "image" && !tl.ReadOnly {
			t.Errorf("image tool of %s lost its readOnlyHint", tl.Server)
		}
	}
	for _, want := range []string{"local/echo", "remote_sse/echo", "remote_http/sum", "keyed/image"} {
		if !seen[want] {
			t.Errorf("tool %s not listed; have %v", want, seen)
		}
	}
	for _, server := range []string{"local", "remote_sse", "remote_http", "keyed"} {
		if got := text(call(t, h, server, "echo", `{"text":"hi from `+server+`"}`)); got != "hi from "+server {
			t.Errorf("%s echo = %q", server, got)
		}
	}
	img := call(t, h, "local", "image", ``)
	if len(img.Content) != 2 || img.Content[1].Type != "image" || !bytes.Equal(img.Content[1].Data, mcptest.PNG) || img.Content[1].MIMEType != "image/png" {
		t.Errorf("image answer = %+v", img)
	}
	sum := call(t, h, "remote_http", "sum", `{"a":2,"b":3}`)
	if sum.IsError || string(sum.Structured) != `{"sum":5}` {
		t.Errorf("sum answer = %+v (structured %s)", sum, sum.Structured)
	}
	if fail := call(t, h, "remote_sse", "fail", `{}`); !fail.IsError || !strings.Contains(text(fail), "on purpose") {
		t.Errorf("fail answer = %+v", fail)
	}
	if _, err := h.Call(context.Background(), "nobody", "echo", nil); err == nil {
		t.Error("a call to an unknown server succeeded")
	}
}

func TestHubStdioEnvironment(t *testing.T) {
	t.Setenv("AGENTD_MCPTEST_LEAK", "leaked")
	h := newHub(t, mcp.Options{BaseEnv: append(os.Environ(), "AGENTD_MCPTEST_LEAK=leaked")}, stdio(t, "local", "stdio"))
	if got := text(call(t, h, "local", "echo", `{"env":"AGENTD_MCPTEST_LEAK"}`)); !strings.Contains(got, "set=false") {
		t.Errorf("the server saw a variable its configuration does not give it: %s", got)
	}
	if got := text(call(t, h, "local", "echo", `{"env":"PATH"}`)); !strings.Contains(got, "set=true") {
		t.Errorf("the server did not get PATH: %s", got)
	}
}

func TestHubFailingServers(t *testing.T) {
	_, keyed := mcptest.HTTP(t, "right")
	h := newHub(t, mcp.Options{},
		stdio(t, "ok", "stdio"),
		stdio(t, "crashes", "crash"),
		mcp.Server{Name: "missing", Transport: mcp.Stdio, Command: "/nonexistent/mcp-server"},
		mcp.Server{Name: "wrong_key", Transport: mcp.SHTTP, URL: keyed, APIKey: "wrong"},
	)
	st := h.State(context.Background())
	reasons := map[string]string{}
	for _, s := range st.Servers {
		reasons[s.Name] = s.Error
	}
	if reasons["ok"] != "" {
		t.Errorf("the good server failed: %s", reasons["ok"])
	}
	if !strings.Contains(reasons["crashes"], "crashing on purpose") {
		t.Errorf("crashing server's reason %q does not hold its stderr", reasons["crashes"])
	}
	if reasons["missing"] == "" {
		t.Error("a server whose command does not exist has no error")
	}
	if !strings.Contains(reasons["wrong_key"], "401") && !strings.Contains(strings.ToLower(reasons["wrong_key"]), "unauthorized") {
		t.Errorf("wrong key's reason = %q", reasons["wrong_key"])
	}
	if strings.Contains(reasons["wrong_key"], "wrong") && strings.Contains(reasons["wrong_key"], "Bearer") {
		t.Errorf("the reason shows the key: %q", reasons["wrong_key"])
	}
	for _, tl := range st.Tools {
		if tl.Server != "ok" {
			t.Errorf("failed server %s has tool %s", tl.Server, tl.Name)
		}
	}
}

// The time bounds are what these tests are about: the servers never answer, so a short bound
// cannot be missed by a busy machine.
func TestHubTimeouts(t *testing.T) {
	t.Run("a server that never answers its start", func(t *testing.T) {
		h := newHub(t, mcp.Options{ConnectTimeout: time.Second}, stdio(t, "hangs", "hang"))
		st := h.State(context.Background())
		if len(st.Servers) != 1 || !strings.Contains(st.Servers[0].Error, "timed out") {
			t.Errorf("state = %+v", st.Servers)
		}
	})
	t.Run("a call that never answers", func(t *testing.T) {
		sse, _ := mcptest.HTTP(t, "")
		h := newHub(t, mcp.Options{CallTimeout: time.Second}, stdio(t, "local", "stdio"), mcp.Server{Name: "remote", Transport: mcp.SSE, URL: sse})
		for _, server := range []string{"local", "remote"} {
			res := call(t, h, server, "hang", `{}`)
			if !res.IsError || !strings.Contains(text(res), "timed out") {
				t.Errorf("%s: hang answer = %+v", server, res)
			}
			if got := text(call(t, h, server, "echo", `{"text":"still here"}`)); got != "still here" {
				t.Errorf("%s: after a timed-out call, echo = %q", server, got)
			}
		}
	})
}

func TestHubRestartsDeadStdioServer(t *testing.T) {
	h := newHub(t, mcp.Options{}, stdio(t, "local", "stdio"))
	pid, err := strconv.Atoi(text(call(t, h, "local", "pid", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The first call after the death may race the hub noticing it; the model would see an
	// error answer and call again, so this does too, within a generous bound.
	deadline := time.Now().Add(30 * time.Second)
	var last mcp.CallResult
	for time.Now().Before(deadline) {
		last = call(t, h, "local", "pid", `{}`)
		if p, err := strconv.Atoi(text(last)); err == nil && p != pid {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server was not started again; last answer %+v", last)
}

func TestHubCloseStopsStdioServer(t *testing.T) {
	h := newHub(t, mcp.Options{}, stdio(t, "local", "stdio"))
	pid, err := strconv.Atoi(text(call(t, h, "local", "pid", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("server process %d still exists after Close", pid)
	}
	if res, err := h.Call(context.Background(), "local", "pid", nil); err == nil && !res.IsError {
		t.Errorf("a call after Close answered %+v", res)
	}
}

func TestHubListChanged(t *testing.T) {
	_, shttp := mcptest.HTTP(t, "")
	h := newHub(t, mcp.Options{}, stdio(t, "local", "stdio"), mcp.Server{Name: "remote", Transport: mcp.SHTTP, URL: shttp})
	before := h.State(context.Background())
	for _, server := range []string{"local", "remote"} {
		call(t, h, server, "add_tool", `{"name":"late_`+server+`"}`)
	}
	deadline := time.Now().Add(30 * time.Second)
	var st mcp.State
	for time.Now().Before(deadline) {
		if h.Generation() != before.Generation {
			st = h.State(context.Background())
			n := 0
			for _, tl := range st.Tools {
				if strings.HasPrefix(tl.Name, "late_") {
					n++
				}
			}
			if n == 2 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the added tools were not listed; generation %d, tools %+v", h.Generation(), st.Tools)
}

func TestConfigureChecks(t *testing.T) {
	h := mcp.NewHub(mcp.Options{}, nil)
	t.Cleanup(h.Close)
	for _, bad := range [][]mcp.Server{
		{{Name: "bad name", Transport: mcp.Stdio, Command: "x"}},
		{{Name: "a", Transport: mcp.Stdio}},
		{{Name: "a", Transport: mcp.SSE}},
		{{Name: "a", Transport: "carrier-pigeon", URL: "x"}},
		{{Name: "a", Transport: mcp.Stdio, Command: "x"}, {Name: "a", Transport: mcp.SSE, URL: "http://x"}},
	} {
		if err := h.Configure(bad); err == nil {
			t.Errorf("Configure(%+v) succeeded", bad)
		}
	}
}
