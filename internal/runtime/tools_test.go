package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool"
)

func needBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bash is not installed")
		}
		t.Skip("bash is not installed")
	}
}

// newToolServer serves a runtime whose terminals give up after noChange without output. The
// cleanup closes the server, which must end every terminal.
func newToolServer(t *testing.T, noChange time.Duration) (*Server, *runtimeclient.Client, string) {
	t.Helper()
	needBash(t)
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{
		SandboxID:               "sb1",
		Workspace:               ws,
		SessionKey:              testKey,
		Env:                     []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ws, runtimeclient.KeyEnv + "=secret"},
		TerminalNoChangeTimeout: noChange,
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
	return s, c, ws
}

func callTool(t *testing.T, c *runtimeclient.Client, name, conv string, args any) tool.Result {
	t.Helper()
	res, err := tryTool(c, name, conv, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryTool makes a call, bounded so that a hang fails instead of stalling; it is safe in any
// goroutine.
func tryTool(c *runtimeclient.Client, name, conv string, args any) (tool.Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return tool.Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Tool(ctx, name, conv, raw)
}

func terminalObs(t *testing.T, res tool.Result) tool.TerminalObservation {
	t.Helper()
	var obs tool.TerminalObservation
	if err := json.Unmarshal(res.Observation, &obs); err != nil || obs.Kind != tool.KindTerminal {
		t.Fatalf("not a terminal observation (%v): %s", err, res.Observation)
	}
	return obs
}

func TestToolRoutes(t *testing.T) {
	_, c, _ := newToolServer(t, time.Minute)
	key := http.Header{runtimeclient.HeaderSessionKey: {testKey}}
	url := c.BaseURL()
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   string
		status int
		want   string // the body, or a substring of it for 200
	}{
		{"no key", "POST", "/api/tools/terminal", nil, `{"conversation_id":"c","arguments":{"command":"true"}}`, 401, `{"detail":"Unauthorized"}`},
		{"unknown tool", "POST", "/api/tools/nope", key, `{"conversation_id":"c","arguments":{}}`, 404, `{"detail":"Not Found"}`},
		{"control-plane tool", "POST", "/api/tools/finish", key, `{"conversation_id":"c","arguments":{"message":"x"}}`, 404, `{"detail":"Not Found"}`},
		{"think", "POST", "/api/tools/think", key, `{"conversation_id":"c","arguments":{"thought":"x"}}`, 404, `{"detail":"Not Found"}`},
		{"wrong method", "GET", "/api/tools/terminal", key, ``, 405, `{"detail":"Method Not Allowed"}`},
		{"no conversation", "POST", "/api/tools/glob", key, `{"arguments":{"pattern":"*"}}`, 422,
			`{"detail":[{"type":"missing","loc":["body","conversation_id"],"msg":"Field required"}]}`},
		{"extra field", "POST", "/api/tools/glob", key, `{"conversation_id":"c","args":{}}`, 422,
			`{"detail":[{"type":"extra_forbidden","loc":["body","args"],"msg":"Extra inputs are not permitted"}]}`},
		{"bad json", "POST", "/api/tools/glob", key, `{`, 422, `{"detail":[{"type":"json_invalid","loc":["body",1],"msg":"JSON decode error"}]}`},
		{"bad arguments are a result", "POST", "/api/tools/file_editor", key, `{"conversation_id":"c","arguments":{"command":"edit","path":7}}`, 200,
			`"is_error":true`},
		{"missing arguments are a result", "POST", "/api/tools/glob", key, `{"conversation_id":"c"}`, 200,
			`pattern: Field required`},
		{"close unknown session", "DELETE", "/api/tools/sessions/nobody", key, ``, 200, `{"closed":false}`},
		{"negative wait", "POST", "/api/tools/terminal", key, `{"conversation_id":"c","arguments":{"command":"true"},"terminal":{"max_wait_seconds":-1}}`, 422,
			`{"detail":[{"type":"greater_than_equal","loc":["body","terminal","max_wait_seconds"],"msg":"Input should be greater than or equal to 0"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, url+tt.path, tt.header, tt.body)
			if status != tt.status {
				t.Fatalf("status %d: %s", status, body)
			}
			if (status == 200 && !strings.Contains(body, tt.want)) || (status != 200 && body != tt.want) {
				t.Fatalf("body\n got %s\nwant %s", body, tt.want)
			}
		})
	}
}

func TestToolArgumentErrors(t *testing.T) {
	_, c, _ := newToolServer(t, time.Minute)
	tests := []struct {
		name string
		tool string
		args string
		want []string
	}{
		{"wrong enum and type", "file_editor", `{"command":"edit","path":7}`,
			[]string{"Invalid arguments for tool file_editor", "command: Input should be 'view', 'create', 'str_replace', 'insert' or 'undo_edit'", "path: Input should be a valid string", "Arguments provided: [command, path]"}},
		{"missing", "terminal", `{"is_input":true}`, []string{"command: Field required"}},
		{"unknown argument", "grep", `{"pattern":"x","regex":true}`, []string{"regex: Extra inputs are not permitted"}},
		{"reset with input", "terminal", `{"command":"C-c","is_input":true,"reset":true}`, []string{"reset cannot be combined with is_input"}},
		{"not an object", "glob", `["*"]`, []string{"must be one JSON object"}},
		{"not json", "glob", `{"pattern": "*`, []string{"must be one JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Tool(context.Background(), tt.tool, "conv", json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("not an error: %s", res.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, res.Text)
				}
			}
			var obs struct {
				Kind    string `json:"kind"`
				IsError bool   `json:"is_error"`
			}
			if err := json.Unmarshal(res.Observation, &obs); err != nil || !obs.IsError || !strings.HasSuffix(obs.Kind, "Observation") {
				t.Fatalf("observation %s", res.Observation)
			}
		})
	}
	_, err := c.Tool(context.Background(), "task_tracker", "conv", json.RawMessage(`{}`))
	var se *runtimeclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Fatalf("control-plane tool through the runtime: %v", err)
	}
}

// TestToolsOverHTTP uses every sandbox tool through the client, as the control plane does.
func TestToolsOverHTTP(t *testing.T) {
	_, c, ws := newToolServer(t, time.Minute)

	res := callTool(t, c, "terminal", "a", map[string]any{"command": "mkdir -p src && cd src && export V=1 && echo ${" + runtimeclient.KeyEnv + ":-no key}"})
	obs := terminalObs(t, res)
	if res.IsError || obs.ExitCode != 0 || obs.Content[0].Text != "no key" || obs.Metadata.WorkingDir != ws+"/src" {
		t.Fatalf("terminal: %s", res.Text)
	}
	res = callTool(t, c, "terminal", "a", map[string]any{"command": "echo $V $PWD"})
	if obs := terminalObs(t, res); obs.Content[0].Text != "1 "+ws+"/src" {
		t.Fatalf("state lost between calls: %s", res.Text)
	}
	// Another conversation has its own shell.
	res = callTool(t, c, "terminal", "b", map[string]any{"command": "echo ${V:-unset} $PWD"})
	if obs := terminalObs(t, res); obs.Content[0].Text != "unset "+ws {
		t.Fatalf("conversations share a shell: %s", res.Text)
	}

	// file_editor, with a relative path hinted from the terminal's directory.
	path := ws + "/src/main.go"
	res = callTool(t, c, "file_editor", "a", map[string]any{"command": "create", "path": path, "file_text": "package main\n\nfunc main() {}\n"})
	if res.IsError {
		t.Fatal(res.Text)
	}
	res = callTool(t, c, "file_editor", "a", map[string]any{"command": "str_replace", "path": path, "old_str": "func main() {}", "new_str": "func main() { println(\"hi\") }"})
	var fobs tool.FileEditorObservation
	if err := json.Unmarshal(res.Observation, &fobs); err != nil || res.IsError || fobs.Kind != tool.KindFileEditor || *fobs.OldContent != "package main\n\nfunc main() {}\n" {
		t.Fatalf("str_replace: %s", res.Observation)
	}
	res = callTool(t, c, "file_editor", "a", map[string]any{"command": "view", "path": "main.go"})
	if !res.IsError || !strings.Contains(res.Text, "Did you mean "+path) {
		t.Fatalf("relative path: %s", res.Text)
	}
	// Arguments models send as strings are repaired.
	res = callTool(t, c, "file_editor", "a", map[string]any{"command": "view", "path": path, "view_range": "[3, \"3\"]", "summary": "look"})
	if res.IsError || !strings.Contains(res.Text, "     3\tfunc main() { println(\"hi\") }") {
		t.Fatalf("view_range as a string: %s", res.Text)
	}

	res = callTool(t, c, "glob", "a", map[string]any{"pattern": "**/*.go"})
	var gobs tool.GlobObservation
	if err := json.Unmarshal(res.Observation, &gobs); err != nil || len(gobs.Files) != 1 || gobs.Files[0] != path {
		t.Fatalf("glob: %s", res.Observation)
	}
	res = callTool(t, c, "grep", "a", map[string]any{"pattern": `println\(`, "include": "*.go"})
	var robs tool.GrepObservation
	if err := json.Unmarshal(res.Observation, &robs); err != nil || len(robs.Matches) != 1 || !strings.Contains(res.Text, "3: func main()") {
		t.Fatalf("grep: %s", res.Text)
	}
}

// TestToolOutputSaved checks that a clipped output is saved in the workspace's .agentd, which
// git is told to ignore, and that the agent can read it.
func TestToolOutputSaved(t *testing.T) {
	_, c, ws := newToolServer(t, time.Minute)
	res := callTool(t, c, "terminal", "a", map[string]any{"command": "seq 1 30000"})
	if !strings.Contains(res.Text, "response clipped") || !strings.Contains(res.Text, ws+"/.agentd/outputs/") {
		t.Fatalf("not clipped into the output directory: %.500s", res.Text)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".agentd", ".gitignore"))
	if err != nil || !strings.Contains(string(b), "*") {
		t.Fatalf(".gitignore: %q %v", b, err)
	}
	res = callTool(t, c, "grep", "a", map[string]any{"pattern": "^29999$"})
	if !strings.Contains(res.Text, "No matches") {
		t.Fatalf("grep searched the hidden output directory: %s", res.Text)
	}
}

// TestToolSerialisation checks that calls of one conversation run one after another while
// conversations run side by side. Each command waits for files the others write, so what is
// checked does not depend on how fast the machine runs them.
func TestToolSerialisation(t *testing.T) {
	_, c, ws := newToolServer(t, time.Minute)
	for _, conv := range []string{"x", "y"} {
		callTool(t, c, "terminal", conv, map[string]any{"command": "true"}) // start the shells
	}
	file := func(name string) string { return filepath.Join(ws, name) }

	// Same conversation: the second call, sent while the first runs, waits for it instead
	// of being refused.
	var wg sync.WaitGroup
	results := make([]tool.Result, 2)
	errs := make([]error, 2)
	wg.Go(func() {
		results[0], errs[0] = tryTool(c, "terminal", "x", map[string]any{"command": "touch " + file("first.started") + "; sleep 0.5; echo first"})
	})
	waitFile(t, file("first.started"))
	wg.Go(func() { results[1], errs[1] = tryTool(c, "terminal", "x", map[string]any{"command": "echo second"}) })
	wg.Wait()
	for i, want := range []string{"first", "second"} {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if obs := terminalObs(t, results[i]); results[i].IsError || obs.Content[0].Text != want {
			t.Fatalf("call %d: %s", i, results[i].Text)
		}
	}

	// Different conversations overlap: each command finishes only once it has seen the
	// other's file, which it cannot while the other waits for its turn. (Bounded, so that a
	// failure reports rather than hangs.)
	meet := func(mine, theirs string) string {
		return "touch " + file(mine) + "; n=0; while [ ! -e " + file(theirs) + " ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n+1)); done; " +
			"[ -e " + file(theirs) + " ] && echo met || echo alone"
	}
	for i, conv := range []string{"x", "y"} {
		cmd := meet("x.ready", "y.ready")
		if conv == "y" {
			cmd = meet("y.ready", "x.ready")
		}
		wg.Go(func() { results[i], errs[i] = tryTool(c, "terminal", conv, map[string]any{"command": cmd}) })
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || terminalObs(t, results[i]).ExitCode != 0 || terminalObs(t, results[i]).Content[0].Text != "met" {
			t.Fatalf("parallel call %d: %v %s; the conversations did not run side by side", i, errs[i], results[i].Text)
		}
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s never appeared: %v", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseToolSession checks that closing a conversation's session kills what its terminal
// runs, background jobs included, and ends a call waiting on it.
func TestCloseToolSession(t *testing.T) {
	_, c, ws := newToolServer(t, time.Minute)
	res := callTool(t, c, "terminal", "gone", map[string]any{"command": "sleep 300 & echo $!"})
	obs := terminalObs(t, res)
	bg, shell := obs.Content[0].Text, obs.Metadata.PID
	if i := strings.LastIndexByte(bg, '\n'); i >= 0 {
		bg = bg[i+1:]
	}

	done := make(chan tool.Result, 1)
	started := filepath.Join(ws, "waiting.started")
	go func() {
		res, err := tryTool(c, "terminal", "gone", map[string]any{"command": "touch " + started + "; sleep 300"})
		if err != nil {
			res.Text = err.Error()
		}
		done <- res
	}()
	waitFile(t, started)
	closed, err := c.CloseToolSession(context.Background(), "gone")
	if err != nil || !closed {
		t.Fatalf("close: %v %v", closed, err)
	}
	select {
	case res := <-done:
		if !strings.Contains(res.Text, "shell exited") {
			t.Fatalf("waiting call: %s", res.Text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting call did not end within 30s of the close")
	}
	waitGone(t, bg)
	waitGone(t, strconv.Itoa(shell))
	if closed, err := c.CloseToolSession(context.Background(), "gone"); err != nil || closed {
		t.Fatalf("second close: %v %v", closed, err)
	}
	// The conversation can start again.
	res = callTool(t, c, "terminal", "gone", map[string]any{"command": "echo again"})
	if terminalObs(t, res).Content[0].Text != "again" {
		t.Fatalf("after close: %s", res.Text)
	}
}

// TestServerCloseEndsTerminals checks that Server.Close kills every terminal and refuses
// later calls.
func TestServerCloseEndsTerminals(t *testing.T) {
	s, c, _ := newToolServer(t, time.Minute)
	var pids []int
	for _, conv := range []string{"p", "q"} {
		res := callTool(t, c, "terminal", conv, map[string]any{"command": "true"})
		pids = append(pids, terminalObs(t, res).Metadata.PID)
	}
	s.Close()
	for _, pid := range pids {
		waitGone(t, strconv.Itoa(pid))
	}
	_, err := c.Tool(context.Background(), "terminal", "p", json.RawMessage(`{"command":"true"}`))
	var se *runtimeclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("call after Close: %v", err)
	}
	s.Close()
}

// TestTerminalWaits: the waits a request carries bound its terminal call: a command that keeps
// printing comes back at the request's ceiling, a quiet one at its no-change timeout, and C-c
// stops each.
func TestTerminalWaits(t *testing.T) {
	_, c, _ := newToolServer(t, time.Hour)
	call := func(args map[string]any, waits *runtimeclient.TerminalWaits) (tool.Result, tool.TerminalObservation) {
		t.Helper()
		raw, _ := json.Marshal(args)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.RunTool(ctx, "terminal", runtimeclient.ToolRequest{ConversationID: "w", Arguments: raw, Terminal: waits})
		if err != nil {
			t.Fatal(err)
		}
		return res, terminalObs(t, res)
	}
	// stop interrupts the running command and waits for it to end.
	stop := func() {
		t.Helper()
		res, obs := call(map[string]any{"command": "C-c", "is_input": true}, runtimeclient.NewTerminalWaits(100*time.Millisecond, 0))
		for deadline := time.Now().Add(30 * time.Second); obs.ExitCode == -1; {
			if time.Now().After(deadline) {
				t.Fatalf("the command did not stop: %s", res.Text)
			}
			res, obs = call(map[string]any{"command": ""}, runtimeclient.NewTerminalWaits(100*time.Millisecond, 0))
		}
		if obs.ExitCode != 130 {
			t.Fatalf("C-c: %s", res.Text)
		}
	}

	res, obs := call(map[string]any{"command": "yes"}, runtimeclient.NewTerminalWaits(time.Hour, 200*time.Millisecond))
	if obs.ExitCode != -1 || !strings.Contains(res.Text, "still running after 0.2 seconds: one call waits at most that long") {
		t.Fatalf("yes: %.1000s", res.Text)
	}
	stop()
	res, obs = call(map[string]any{"command": "sleep infinity"}, runtimeclient.NewTerminalWaits(200*time.Millisecond, time.Hour))
	if obs.ExitCode != -1 || !strings.Contains(res.Text, "printed nothing new for 0.2 seconds") {
		t.Fatalf("sleep: %s", res.Text)
	}
	stop()
}

// TestTerminalEnv: the variables of a terminal call reach its command and the commands after
// it while the calls keep sending them; a call without them unsets them. Other conversations'
// terminals never get them, and neither does the runtime's environment.
func TestTerminalEnv(t *testing.T) {
	s, c, ws := newToolServer(t, time.Hour)
	call := func(conv, command string, env map[string]string) string {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"command": command})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.RunTool(ctx, "terminal", runtimeclient.ToolRequest{ConversationID: conv, Arguments: raw, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		obs := terminalObs(t, res)
		if res.IsError || obs.ExitCode != 0 {
			t.Fatalf("%q: %s", command, res.Text)
		}
		return obs.Content[0].Text
	}
	env := map[string]string{"DEPLOY_TOKEN": "tok-secret-value-1"}
	if got := call("a", `echo "$DEPLOY_TOKEN"`, env); got != "tok-secret-value-1" {
		t.Fatalf("DEPLOY_TOKEN reads %q", got)
	}
	if got := call("b", `echo "${DEPLOY_TOKEN-unset}"`, nil); got != "unset" {
		t.Fatalf("another conversation's terminal reads %q", got)
	}
	if got := call("a", `echo "${DEPLOY_TOKEN-unset}"`, nil); got != "unset" {
		t.Fatalf("a call without it reads %q", got)
	}
	for _, kv := range s.env {
		if strings.Contains(kv, "tok-secret-value-1") {
			t.Fatalf("the runtime's environment holds the value: %s", kv)
		}
	}
	filepath.WalkDir(ws, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), "tok-secret-value-1") {
				t.Errorf("%s holds the value", path)
			}
		}
		return nil
	})
}

// TestToolWorkingDir: a conversation's working directory is where its terminal starts and
// what its searches look in; one outside the workspace, relative or not a directory is
// refused, and one that does not exist is the workspace.
func TestToolWorkingDir(t *testing.T) {
	_, c, ws := newToolServer(t, time.Minute)
	dir := filepath.Join(ws, "project")
	for _, f := range []string{"project/in.go", "outside.go"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, f), []byte("package x // needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(conv, name, wd string, args any) (tool.Result, error) {
		raw, _ := json.Marshal(args)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.RunTool(ctx, name, runtimeclient.ToolRequest{ConversationID: conv, Arguments: raw, WorkingDir: wd})
	}
	res, err := run("a", "terminal", dir, map[string]any{"command": "pwd"})
	if err != nil || terminalObs(t, res).Content[0].Text != dir {
		t.Fatalf("terminal: %v %s", err, res.Text)
	}
	res, err = run("a", "glob", dir, map[string]any{"pattern": "**/*.go"})
	var gobs tool.GlobObservation
	if err != nil || json.Unmarshal(res.Observation, &gobs) != nil || !slices.Equal(gobs.Files, []string{filepath.Join(dir, "in.go")}) {
		t.Fatalf("glob: %v %s", err, res.Observation)
	}
	res, err = run("a", "grep", dir, map[string]any{"pattern": "needle"})
	if err != nil || !strings.Contains(res.Text, "in.go") || strings.Contains(res.Text, "outside.go") {
		t.Fatalf("grep: %v %s", err, res.Text)
	}
	// A directory that does not exist: the workspace.
	res, err = run("b", "terminal", filepath.Join(ws, "missing"), map[string]any{"command": "pwd"})
	if err != nil || terminalObs(t, res).Content[0].Text != ws {
		t.Fatalf("missing directory: %v %s", err, res.Text)
	}
	for _, bad := range []string{"/etc", "project", filepath.Join(ws, "outside.go"), ws + "/../x"} {
		_, err := run("c", "terminal", bad, map[string]any{"command": "pwd"})
		var se *runtimeclient.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
			t.Errorf("working_dir %q: %v, want a 400", bad, err)
		}
	}
}
