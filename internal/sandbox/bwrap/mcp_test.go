package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

const mcpAdminKey = "bwrap-mcp-admin-key-0123456789"

// mcpServer is a whole agentd serve on the bwrap backend, and its admin as a client of its
// HTTP API.
type mcpServer struct {
	t    *testing.T
	app  *apptest.Server
	url  string
	logs *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mcpConnectBound is the MCP connect bound of the servers whose MCP servers must connect:
// long, since a race-built test binary started in a sandbox weighted a tenth of the rest
// may take many seconds to answer on a busy machine, and no server there fails by it.
const mcpConnectBound = 3 * time.Minute

// newMCPServer serves agentd on the bwrap backend with the default network (egress) and a
// spec "isolated" with network none, with connectBound as its MCP connect bound.
func newMCPServer(t *testing.T, connectBound time.Duration) *mcpServer {
	dir := sandboxtest.ShortDir(t)
	root := filepath.Join(dir, "sandboxes", "bwrap")
	newTestBackend(t, testRoot(t)) // skip early when bwrap does not work here
	cfg, err := config.Load([]string{"--data-dir", dir, "--admin-key", mcpAdminKey, "--sandbox-backend", Name,
		"--mcp-connect-timeout", connectBound.String(),
		// The scripted model answers the agent alone: no title call takes one of its steps.
		"--conversation-titles", "off"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{sandboxtest.EnvRuntime: "1"}
	limits := config.LimitsConfig{MemoryMB: 1024, CPUs: 1, PIDs: 512}
	cfg.Specs = []config.SpecConfig{
		{ID: "default", InitialEnv: env, Limits: limits},
		{ID: "isolated", InitialEnv: env, Network: sandbox.NetworkNone, Limits: limits},
	}
	// Its Close is registered before the cleanup that uses it, so runs after.
	cleaner := newTestBackend(t, root)
	sandboxtest.DestroyAllAtCleanup(t, cleaner)
	b := newTestBackend(t, root)
	logs := &lockedBuffer{}
	a, err := apptest.Start(context.Background(), app.Options{Config: cfg, Backend: b, Version: "test",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	return &mcpServer{t: t, app: a, url: srv.URL, logs: logs}
}

// api calls the server as its admin and decodes the answer into out, failing the test on any
// other status than want.
func (s *mcpServer) api(method, path string, body any, want int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("X-Session-API-Key", mcpAdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// eventually polls cond until it holds; the bound only ends a test that would never pass.
func (s *mcpServer) eventually(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("still waiting for %s after 2 minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startSandbox starts a sandbox of spec and waits until it runs.
func (s *mcpServer) startSandbox(spec string) string {
	s.t.Helper()
	var sb struct {
		ID string `json:"id"`
	}
	s.api("POST", "/api/v1/sandboxes?sandbox_spec_id="+spec, nil, http.StatusOK, &sb)
	s.eventually("sandbox "+sb.ID+" RUNNING", func() bool {
		var got []*struct {
			Status string `json:"status"`
		}
		s.api("GET", "/api/v1/sandboxes?id="+sb.ID, nil, http.StatusOK, &got)
		return len(got) == 1 && got[0] != nil && got[0].Status == "RUNNING"
	})
	return sb.ID
}

// converse starts a conversation in sandbox sb with mcp_config and waits until its agent
// has finished; it returns the conversation's id.
func (s *mcpServer) converse(sb string, mcpConfig map[string]any) string {
	s.t.Helper()
	var task struct {
		ID string `json:"id"`
	}
	s.api("POST", "/api/v1/app-conversations", map[string]any{
		"sandbox_id":      sb,
		"initial_message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "use the tools"}}, "run": true},
		"mcp_config":      mcpConfig,
	}, http.StatusOK, &task)
	var conv string
	s.eventually("start task "+task.ID+" READY", func() bool {
		var got []*struct {
			Status            string  `json:"status"`
			Detail            *string `json:"detail"`
			AppConversationID *string `json:"app_conversation_id"`
		}
		s.api("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, nil, http.StatusOK, &got)
		if got[0].Status == "ERROR" {
			s.t.Fatalf("start task failed: %v", *got[0].Detail)
		}
		if got[0].AppConversationID != nil {
			conv = *got[0].AppConversationID
		}
		return got[0].Status == "READY"
	})
	s.eventually("the agent of "+conv+" to finish", func() bool {
		var got []*struct {
			ExecutionStatus string `json:"execution_status"`
		}
		s.api("GET", "/api/v1/app-conversations?ids="+conv, nil, http.StatusOK, &got)
		if st := got[0].ExecutionStatus; st == "error" || st == "stuck" {
			s.t.Fatalf("the agent ended %s", st)
		}
		return got[0].ExecutionStatus == "finished"
	})
	return conv
}

// useModel makes the model at url the admin's.
func (s *mcpServer) useModel(url string) {
	s.t.Helper()
	s.api("POST", "/api/settings", map[string]any{"llm_model": "gpt-4o", "llm_base_url": url, "llm_api_key": llmtest.APIKey}, http.StatusOK, nil)
}

// serverErrors are the details of the conversation's MCPServerErrorEvents, by server.
func (s *mcpServer) serverErrors(conv string) map[string]string {
	s.t.Helper()
	reasons := map[string]string{}
	for _, ev := range s.events(conv) {
		if ev.Kind == "MCPServerErrorEvent" {
			reasons[ev.Server] = ev.Detail
		}
	}
	return reasons
}

// mcpEvent is what these tests read of an event.
type mcpEvent struct {
	Kind        string          `json:"kind"`
	ToolName    string          `json:"tool_name"`
	Observation json.RawMessage `json:"observation"`
	Server      string          `json:"server"`
	Detail      string          `json:"detail"`
	raw         json.RawMessage
}

func (s *mcpServer) events(conv string) []mcpEvent {
	s.t.Helper()
	var all []mcpEvent
	page := ""
	for {
		var p struct {
			Items      []json.RawMessage `json:"items"`
			NextPageID *string           `json:"next_page_id"`
		}
		s.api("GET", "/api/v1/events/search?conversation_id__eq="+conv+"&page_id="+url.QueryEscape(page), nil, http.StatusOK, &p)
		for _, raw := range p.Items {
			var ev mcpEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				s.t.Fatal(err)
			}
			ev.raw = raw
			all = append(all, ev)
		}
		if p.NextPageID == nil {
			return all
		}
		page = *p.NextPageID
	}
}

// text is the text of an observation's content.
func (ev mcpEvent) text() string {
	var o struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(ev.Observation, &o)
	var parts []string
	for _, c := range o.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// mcpOnInternet serves the test MCP servers over SSE and streamable HTTP where a sandbox with
// the default network reaches them (the host's loopback it cannot): without a key under
// /open, and wanting key under /keyed.
func mcpOnInternet(t *testing.T, key string) (sse, keyedSSE, keyedSHTTP string) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	mux := http.NewServeMux()
	mux.Handle("/open/", mcptest.Handler("", stop))
	mux.Handle("/keyed/", mcptest.Handler(key, stop))
	base := sandboxtest.ServeOnInternet(t, mux)
	return base + "/open/sse", base + "/keyed/sse", base + "/keyed/mcp"
}

// TestMCPEndToEnd: a conversation in a bwrap sandbox with a stdio server, an SSE server and a
// streamable-HTTP server that wants an API key (past the host, where the sandbox's default
// network reaches), and two servers that fail: one crashes on start, one is given a wrong key
// (one that never answers is TestMCPServerHangs'). The scripted model calls a tool of each working server and reads
// the answers as observations; each failing server leaves an event that says why and the
// conversation runs on. The stdio server runs inside the sandbox, in its PID namespace, and is
// gone once the sandbox is deleted. The API keys are in no event nor log line.
func TestMCPEndToEnd(t *testing.T) {
	s := newMCPServer(t, mcpConnectBound)
	const key, wrongKey = "mcp-e2e-key-7b1f0c", "mcp-e2e-wrong-0a9d"
	sse, keyedSSE, keyedSHTTP := mcpOnInternet(t, key)
	host := strings.NewReplacer(".", "_").Replace(strings.Split(strings.TrimPrefix(sse, "http://"), ":")[0])
	model := llmtest.NewOpenAI(t,
		llmtest.Calls(llmtest.Call("local_pid", `{}`)),
		llmtest.Calls(llmtest.Call(host+"_echo", `{"text":"hello over sse"}`)),
		llmtest.Calls(llmtest.Call(host+"_3_echo", `{"text":"hello over streamable http"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	s.useModel(model.URL())

	marker := "mcp-e2e-" + sandboxtest.NewID()
	self := func(name, mode string, args ...string) map[string]any {
		return map[string]any{"name": name, "command": "/proc/self/exe", "args": args, "env": map[string]any{mcptest.ModeEnv: mode}}
	}
	sb := s.startSandbox("default")
	conv := s.converse(sb, map[string]any{
		"stdio_servers": []any{self("local", "stdio", marker), self("crashes", "crash")},
		// Servers named after their host, in order: <host>, <host>_2, <host>_3.
		"sse_servers":   []any{sse, map[string]any{"url": keyedSSE, "api_key": wrongKey}},
		"shttp_servers": []any{map[string]any{"url": keyedSHTTP, "api_key": key}},
	})
	evs := s.events(conv)
	var observations []string
	reasons := map[string]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case "ObservationEvent":
			observations = append(observations, ev.ToolName+": "+ev.text())
		case "MCPServerErrorEvent":
			reasons[ev.Server] = ev.Detail
		}
		for _, k := range []string{key, wrongKey} {
			if bytes.Contains(ev.raw, []byte(k)) {
				t.Errorf("an event holds an API key: %s", ev.raw)
			}
		}
	}
	all := strings.Join(observations, "\n")
	for _, want := range []string{
		host + "_echo: hello over sse",
		host + "_3_echo: hello over streamable http",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no observation %q; observations:\n%s", want, all)
		}
	}
	if !strings.Contains(reasons["crashes"], "crashing on purpose") {
		t.Errorf("the crashing server's event says %q", reasons["crashes"])
	}
	if r := reasons[host+"_2"]; !strings.Contains(r, "401") && !strings.Contains(strings.ToLower(r), "unauthorized") {
		t.Errorf("the wrongly keyed server's event says %q", r)
	}
	if len(reasons) != 2 {
		t.Errorf("servers reported as failed: %v", reasons)
	}
	for _, k := range []string{key, wrongKey} {
		if strings.Contains(s.logs.String(), k) {
			t.Errorf("the server log holds an API key")
		}
	}

	// The stdio server, seen from the host: a process in the sandbox's PID namespace, where
	// it has the pid it answered with.
	var nsPID string
	for _, o := range observations {
		if rest, ok := strings.CutPrefix(o, "local_pid: "); ok {
			nsPID = strings.TrimSpace(rest)
		}
	}
	hostPID := onlyProcess(t, marker)
	status, err := os.ReadFile("/proc/" + hostPID + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var nspids []string
	for _, line := range strings.Split(string(status), "\n") {
		if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
			nspids = strings.Fields(f)
		}
	}
	if len(nspids) != 2 || nspids[0] != hostPID || nspids[1] != nsPID {
		t.Errorf("the server (host pid %s) has the pids %q, want it in one more namespace with the pid %q it answered", hostPID, nspids, nsPID)
	}
	ours, _ := os.Readlink("/proc/self/ns/pid")
	theirs, _ := os.Readlink("/proc/" + hostPID + "/ns/pid")
	if theirs == "" || theirs == ours {
		t.Errorf("the server's PID namespace %q is the host's %q", theirs, ours)
	}
	// Seen from inside: the same process, by its pid there.
	rec := s.sandboxRecord(sb)
	rt, err := s.app.Sandboxes.Client(context.Background(), rec.OwnerID, sb)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Run(context.Background(), runtimeclient.CommandRequest{Command: "tr '\\0' ' ' < /proc/" + nsPID + "/cmdline", TimeoutSeconds: 60})
	if err != nil || !strings.Contains(res.Output, marker) {
		t.Errorf("inside the sandbox, pid %s is %+v, %v; want the server", nsPID, res, err)
	}

	// The server is in every cgroup of the runtime that started it, the sandbox's: it counts
	// against the sandbox's limits, and the sandbox's pause freezes it with the rest.
	parent := procField(t, hostPID, "PPid:")
	if got, want := readProc(t, hostPID, "cgroup"), readProc(t, parent, "cgroup"); got != want {
		t.Errorf("the server's cgroups\n%s\nare not its runtime's\n%s", got, want)
	}
	freezer := freezerState(t, hostPID)
	if freezer == "" {
		t.Error("the server is in no freezer cgroup")
	}
	s.api("POST", "/api/v1/sandboxes/"+sb+"/pause", nil, http.StatusOK, nil)
	if st := freezerState(t, hostPID); st != "FROZEN" && st != "1" {
		t.Errorf("the server's freezer reads %q while its sandbox is paused", st)
	}
	s.api("POST", "/api/v1/sandboxes/"+sb+"/resume", nil, http.StatusOK, nil)
	// Resumed with it: the same process answers.
	rt, err = s.app.Sandboxes.Client(context.Background(), rec.OwnerID, sb)
	if err != nil {
		t.Fatal(err)
	}
	again, err := rt.CallMCP(context.Background(), conv, "local", "pid", nil)
	if err != nil || len(again.Content) == 0 || strings.TrimSpace(again.Content[0].Text) != nsPID {
		t.Errorf("after the resume the stdio server answered %+v, %v; want its pid %s", again, err, nsPID)
	}

	s.api("DELETE", "/api/v1/sandboxes/"+sb, nil, http.StatusOK, nil)
	s.eventually("the stdio server to be gone", func() bool { return len(processesWith(marker)) == 0 })
}

// TestMCPServerHangs: a stdio server that never answers costs the conversation its connect
// bound, after which an event says it timed out and the agent runs without it. The bound is
// a second, which is all a server that never answers needs however busy the machine.
func TestMCPServerHangs(t *testing.T) {
	s := newMCPServer(t, time.Second)
	model := llmtest.NewOpenAI(t, llmtest.Text("Nothing to call."))
	s.useModel(model.URL())
	server := map[string]any{"name": "hangs", "command": "/proc/self/exe", "env": map[string]any{mcptest.ModeEnv: "hang"}}
	conv := s.converse(s.startSandbox("default"), map[string]any{"stdio_servers": []any{server}})
	reasons := s.serverErrors(conv)
	if len(reasons) != 1 || !strings.Contains(reasons["hangs"], "timed out") {
		t.Errorf("events about the servers that failed: %q", reasons)
	}
	if n := len(model.Requests()); n == 0 {
		t.Error("the agent never asked the model")
	}
}

func readProc(t *testing.T, pid, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// procField is a field of /proc/<pid>/status.
func procField(t *testing.T, pid, field string) string {
	t.Helper()
	for _, line := range strings.Split(readProc(t, pid, "status"), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in the status of %s", field, pid)
	return ""
}

// freezerState reads the freezer of pid's cgroup: cgroup v1's freezer.state (THAWED,
// FREEZING, FROZEN), or v2's cgroup.freeze (0, 1); "" when it has none.
func freezerState(t *testing.T, pid string) string {
	t.Helper()
	for _, line := range strings.Split(readProc(t, pid, "cgroup"), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case slices.Contains(strings.Split(parts[1], ","), "freezer"):
			file = filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state")
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.freeze")
		default:
			continue
		}
		if b, err := os.ReadFile(file); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// TestMCPNetworkNone: a sandbox with network none reaches neither an SSE server past the host
// (which a sandbox with the default network reaches, see TestMCPEndToEnd) nor one on the
// host's loopback (its loopback is its own), so the conversation starts without them and an
// event says so for each; both answer the host.
func TestMCPNetworkNone(t *testing.T) {
	s := newMCPServer(t, mcpConnectBound)
	remote, _, _ := mcpOnInternet(t, "")
	local, _ := mcptest.HTTP(t, "")
	model := llmtest.NewOpenAI(t, llmtest.Text("Nothing to call."))
	s.useModel(model.URL())
	conv := s.converse(s.startSandbox("isolated"), map[string]any{"sse_servers": []any{remote, local}})
	reasons := s.serverErrors(conv)
	if len(reasons) != 2 || !strings.HasPrefix(reasons["127_0_0_1"], "connect: ") {
		t.Errorf("events about the unreachable servers: %q", reasons)
	}
	for _, tl := range model.Requests()[0].Tools {
		if tl.Name == "echo" || strings.HasSuffix(tl.Name, "_echo") {
			t.Errorf("the model was offered %s of a server the sandbox cannot reach", tl.Name)
		}
	}
	for _, u := range []string{remote, local} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("the SSE server at %s does not answer the host: %v", u, err)
		}
		resp.Body.Close()
	}
}

func (s *mcpServer) sandboxRecord(id string) sandbox.Sandbox {
	s.t.Helper()
	var me struct {
		ID string `json:"id"`
	}
	s.api("GET", "/api/v1/users/me", nil, http.StatusOK, &me)
	rec, err := s.app.Sandboxes.Get(context.Background(), me.ID, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return rec
}

// processesWith are the pids of the live processes whose command lines hold needle.
func processesWith(needle string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		if bytes.Contains(cmdline, []byte(needle)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func onlyProcess(t *testing.T, needle string) string {
	t.Helper()
	pids := processesWith(needle)
	if len(pids) != 1 {
		t.Fatalf("processes with %q: %q, want one", needle, pids)
	}
	return pids[0]
}
