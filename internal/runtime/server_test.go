package runtime

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

const testKey = "test-session-key"

func newTestServer(t *testing.T, env []string) (*httptest.Server, string) {
	t.Helper()
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{
		SandboxID:  "sb1",
		Workspace:  ws,
		SessionKey: testKey,
		Version:    "test",
		Env:        env,
		Now:        func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs, ws
}

func do(t *testing.T, method, url string, header http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// postJSON posts req as JSON to url with the test's session key, and decodes an answer of
// 200 into a T; it returns the status, that T and the answer's text.
func postJSON[T any](t *testing.T, url string, req any) (int, T, string) {
	t.Helper()
	b, _ := json.Marshal(req)
	code, body := do(t, "POST", url, http.Header{runtimeclient.HeaderSessionKey: {testKey}}, string(b))
	var res T
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
	}
	return code, res, body
}

func TestNewServerNeedsKey(t *testing.T) {
	if _, err := NewServer(ServerConfig{Workspace: "/tmp"}); err == nil {
		t.Fatal("NewServer without a key succeeded")
	}
	if _, err := NewServer(ServerConfig{Workspace: "rel", SessionKey: "k"}); err == nil {
		t.Fatal("NewServer with a relative workspace succeeded")
	}
}

func TestAuth(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	key := http.Header{runtimeclient.HeaderSessionKey: {testKey}}
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		status int
		body   string
	}{
		{"alive without key", "GET", "/alive", nil, 200, `{"status":"ok"}`},
		{"health without key", "GET", "/health", nil, 200, `"OK"`},
		{"identity without key", "GET", "/api/identity", nil, 401, `{"detail":"Unauthorized"}`},
		{"wrong key", "GET", "/api/identity", http.Header{runtimeclient.HeaderSessionKey: {"nope"}}, 401, `{"detail":"Unauthorized"}`},
		{"key prefix", "GET", "/api/identity", http.Header{runtimeclient.HeaderSessionKey: {testKey[:4]}}, 401, `{"detail":"Unauthorized"}`},
		{"wrong bearer", "GET", "/api/identity", http.Header{"Authorization": {"Bearer nope"}}, 401, `{"detail":"Unauthorized"}`},
		{"basic scheme", "GET", "/api/identity", http.Header{"Authorization": {"Basic " + testKey}}, 401, `{"detail":"Unauthorized"}`},
		{"unknown path without key", "GET", "/nope", nil, 401, `{"detail":"Unauthorized"}`},
		{"unknown path with key", "GET", "/nope", key, 404, `{"detail":"Not Found"}`},
		{"wrong method", "DELETE", "/api/identity", key, 405, `{"detail":"Method Not Allowed"}`},
		{"command without key", "POST", "/api/command", nil, 401, `{"detail":"Unauthorized"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, hs.URL+tt.path, tt.header, "")
			if status != tt.status || body != tt.body {
				t.Fatalf("got %d %s, want %d %s", status, body, tt.status, tt.body)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	for _, h := range []http.Header{
		{runtimeclient.HeaderSessionKey: {testKey}},
		{"Authorization": {"Bearer " + testKey}},
		{"Authorization": {"bearer " + testKey}},
	} {
		status, body := do(t, "GET", hs.URL+"/api/identity", h, "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var id runtimeclient.Identity
		if err := json.Unmarshal([]byte(body), &id); err != nil {
			t.Fatal(err)
		}
		want := runtimeclient.Identity{SandboxID: "sb1", Workspace: ws, PID: os.Getpid(), Version: "test",
			StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		if id != want {
			t.Fatalf("identity %+v, want %+v", id, want)
		}
	}
}

func runCmd(t *testing.T, url string, req runtimeclient.CommandRequest) runtimeclient.CommandResult {
	t.Helper()
	c, err := runtimeclient.NewClient(url, testKey)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	// Past the command's own timeout (the default one when unset), the server is stuck.
	timeout := req.TimeoutSeconds
	if timeout == 0 {
		timeout = runtimeclient.DefaultCommandTimeoutSeconds
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout)*time.Second+time.Minute)
	defer cancel()
	res, err := c.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCommand(t *testing.T) {
	hs, ws := newTestServer(t, []string{"PATH=/usr/bin:/bin", runtimeclient.KeyEnv + "=secret", "KEEP=me"})
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  runtimeclient.CommandRequest
		want runtimeclient.CommandResult
	}{
		{"echo", runtimeclient.CommandRequest{Command: "echo hello"}, runtimeclient.CommandResult{Output: "hello\n"}},
		{"exit code", runtimeclient.CommandRequest{Command: "echo out; exit 3"}, runtimeclient.CommandResult{ExitCode: 3, Output: "out\n"}},
		{"interleaved", runtimeclient.CommandRequest{Command: "echo a; echo b >&2; echo c"}, runtimeclient.CommandResult{Output: "a\nb\nc\n"}},
		{"cwd default", runtimeclient.CommandRequest{Command: "pwd"}, runtimeclient.CommandResult{Output: ws + "\n"}},
		{"cwd relative", runtimeclient.CommandRequest{Command: "pwd", Cwd: "sub"}, runtimeclient.CommandResult{Output: ws + "/sub\n"}},
		{"cwd absolute", runtimeclient.CommandRequest{Command: "pwd", Cwd: "/"}, runtimeclient.CommandResult{Output: "/\n"}},
		{"env", runtimeclient.CommandRequest{Command: `echo "$A $KEEP"`, Env: map[string]string{"A": "b"}}, runtimeclient.CommandResult{Output: "b me\n"}},
		{"no key in env", runtimeclient.CommandRequest{Command: "env | grep -c " + runtimeclient.KeyEnv + " || true"}, runtimeclient.CommandResult{Output: "0\n"}},
		{"signal", runtimeclient.CommandRequest{Command: "kill -TERM $$"}, runtimeclient.CommandResult{ExitCode: 128 + 15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCmd(t, hs.URL, tt.req)
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCommandTruncated(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	got := runCmd(t, hs.URL, runtimeclient.CommandRequest{Command: "head -c 3000000 /dev/zero | tr '\\0' a; echo done >&2"})
	if !got.Truncated || len(got.Output) != runtimeclient.MaxOutputBytes || got.ExitCode != 0 {
		t.Fatalf("truncated=%v len=%d exit=%d", got.Truncated, len(got.Output), got.ExitCode)
	}
	if strings.Trim(got.Output, "a") != "" {
		t.Fatal("kept output is not the start of the output")
	}
}

// TestCommandTimeoutKillsGroup checks that a timeout kills what the command started too.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	// The timeout must fire after the shell has started the background process: a machine
	// too busy to get there within the timeout is given a longer one.
	for timeout := 1; ; timeout *= 2 {
		got := runCmd(t, hs.URL, runtimeclient.CommandRequest{
			Command:        "sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; echo started; sleep 300",
			TimeoutSeconds: timeout,
		})
		if !got.TimedOut || got.ExitCode != -1 {
			t.Fatalf("got %+v", got)
		}
		b, err := os.ReadFile(filepath.Join(ws, "bg.pid"))
		if got.Output != "started\n" || err != nil {
			if timeout >= 16 {
				t.Fatalf("the command did not get as far as its background process in %ds: %+v, %v", timeout, got, err)
			}
			continue
		}
		waitGone(t, strings.TrimSpace(string(b)))
		return
	}
}

// TestCommandClientCancel checks that a client that goes away kills the command's group.
func TestCommandClientCancel(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo $$ > sh.pid; sleep 300"})
		done <- err
	}()
	pidFile := filepath.Join(ws, "sh.pid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			cancel()
			if err := <-done; err == nil {
				t.Fatal("cancelled Run returned no error")
			}
			waitGone(t, strings.TrimSpace(string(b)))
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("command never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGone waits until pid no longer runs (a zombie counts as gone: its parent was killed
// too and nobody may reap it).
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s still runs: %s", pid, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCommandValidation(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	key := http.Header{runtimeclient.HeaderSessionKey: {testKey}}
	tests := []struct {
		name string
		body string
		want string
	}{
		{"empty body", ``, `{"detail":[{"type":"missing","loc":["body"],"msg":"Field required"}]}`},
		{"bad json", `{"command":`, `{"detail":[{"type":"json_invalid","loc":["body",11],"msg":"JSON decode error"}]}`},
		{"not an object", `[1]`, `{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from"}]}`},
		{"missing command", `{}`, `{"detail":[{"type":"missing","loc":["body","command"],"msg":"Field required"}]}`},
		{"empty command", `{"command":""}`, `{"detail":[{"type":"string_too_short","loc":["body","command"],"msg":"String should have at least 1 character"}]}`},
		{"command not string", `{"command":1}`, `{"detail":[{"type":"string_type","loc":["body","command"],"msg":"Input should be a valid string"}]}`},
		{"null command", `{"command":null}`, `{"detail":[{"type":"string_type","loc":["body","command"],"msg":"Input should be a valid string"}]}`},
		{"extra field", `{"command":"true","shell":"zsh"}`, `{"detail":[{"type":"extra_forbidden","loc":["body","shell"],"msg":"Extra inputs are not permitted"}]}`},
		{"timeout zero", `{"command":"true","timeout_seconds":0}`, `{"detail":[{"type":"greater_than_equal","loc":["body","timeout_seconds"],"msg":"Input should be greater than or equal to 1"}]}`},
		{"timeout too big", `{"command":"true","timeout_seconds":3601}`, `{"detail":[{"type":"less_than_equal","loc":["body","timeout_seconds"],"msg":"Input should be less than or equal to 3600"}]}`},
		{"timeout fraction", `{"command":"true","timeout_seconds":1.5}`, `{"detail":[{"type":"int_from_float","loc":["body","timeout_seconds"],"msg":"Input should be a valid integer, got a number with a fractional part"}]}`},
		{"timeout string", `{"command":"true","timeout_seconds":"5"}`, `{"detail":[{"type":"int_type","loc":["body","timeout_seconds"],"msg":"Input should be a valid integer"}]}`},
		{"env not object", `{"command":"true","env":[]}`, `{"detail":[{"type":"dict_type","loc":["body","env"],"msg":"Input should be a valid dictionary"}]}`},
		{"env value not string", `{"command":"true","env":{"A":1}}`, `{"detail":[{"type":"string_type","loc":["body","env","A"],"msg":"Input should be a valid string"}]}`},
		{"env bad name", `{"command":"true","env":{"A=B":"x"}}`, `{"detail":[{"type":"value_error","loc":["body","env","A=B"],"msg":"Value error, an environment variable name must be non-empty and contain no '=' or NUL"}]}`},
		{"cwd missing", `{"command":"true","cwd":"nope"}`, ``},
		{"several", `{"cwd":5,"x":1}`, `{"detail":[{"type":"missing","loc":["body","command"],"msg":"Field required"},{"type":"string_type","loc":["body","cwd"],"msg":"Input should be a valid string"},{"type":"extra_forbidden","loc":["body","x"],"msg":"Extra inputs are not permitted"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, "POST", hs.URL+"/api/command", key, tt.body)
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d: %s", status, body)
			}
			if tt.want != "" && body != tt.want {
				t.Fatalf("body\n got %s\nwant %s", body, tt.want)
			}
		})
	}
}

func TestCommandDefaults(t *testing.T) {
	req, err := decodeCommandRequest([]byte(`{"command":"x","env":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.TimeoutSeconds != runtimeclient.DefaultCommandTimeoutSeconds || req.Cwd != "" || req.Env != nil {
		t.Fatalf("defaults not applied: %+v", req)
	}
}

// TestCommandBackground checks that a background process that keeps the output pipe open
// neither blocks the answer nor gets killed when the command returns.
func TestCommandBackground(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	// A command blocked by its background process would time out long before the sleep ends.
	got := runCmd(t, hs.URL, runtimeclient.CommandRequest{Command: "sleep 300 & echo $! > bg.pid; echo started", TimeoutSeconds: 60})
	if got != (runtimeclient.CommandResult{Output: "started\n"}) {
		t.Fatalf("got %+v, want the output at once, not a timeout", got)
	}
	b, err := os.ReadFile(filepath.Join(ws, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("background process was killed: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, strconv.Itoa(pid))
}

// TestOutputPipeReadAfterGrace: what a command wrote before it exited is kept even when this
// process only gets to read it after pipeGrace (a starved runtime), while a process the
// command left behind still holds the pipe: the deadline ends the wait for more output, not
// the read of what the pipe holds.
func TestOutputPipeReadAfterGrace(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open, as by a process left in the background
	if _, err := w.Write([]byte("listening\n")); err != nil {
		t.Fatal(err)
	}
	out := &cappedBuffer{limit: 1 << 20}
	p := &outPipe{r: r, w: out, done: make(chan struct{})}
	if err := r.SetReadDeadline(time.Now()); err != nil { // the grace ran out before any read
		t.Fatal(err)
	}
	p.copy()
	r.Close()
	if got, _ := out.result(); got != "listening\n" {
		t.Fatalf("read %q, want what the pipe held", got)
	}
}

// TestCommandOutputOrder: standard output and error share one pipe, in the order written.
func TestCommandOutputOrder(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	got := runCmd(t, hs.URL, runtimeclient.CommandRequest{Command: "echo 1; echo 2 >&2; echo 3; echo 4 >&2"})
	if got.Output != "1\n2\n3\n4\n" {
		t.Fatalf("output %q", got.Output)
	}
}
