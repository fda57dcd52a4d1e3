package httpapi_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"
)

// bashEvent is a BashCommand or BashOutput as a client reads it.
type bashEvent struct {
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Timestamp string  `json:"timestamp"`
	Command   string  `json:"command"`
	Timeout   int     `json:"timeout"`
	CommandID string  `json:"command_id"`
	ExitCode  *int    `json:"exit_code"`
	Stdout    *string `json:"stdout"`
	Stderr    *string `json:"stderr"`
}

// bashClient runs commands as the SDK's RemoteWorkspace does: at the host cut from
// conversation_url, with the session key.
type bashClient struct {
	e    *env
	host string
	key  http.Header
}

// in returns the view of the client for t, a subtest: its failures are t's.
func (b *bashClient) in(t *testing.T) *bashClient {
	v := *b
	v.e = b.e.in(t)
	return &v
}

func (b *bashClient) start(body string) bashEvent {
	b.e.t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range b.key {
		h[k] = v
	}
	st, raw := b.e.callAt("POST", b.host+"/api/bash/start_bash_command", h, strings.NewReader(body))
	var cmd bashEvent
	if st != http.StatusOK || json.Unmarshal(raw, &cmd) != nil || cmd.Kind != "BashCommand" || cmd.ID == "" {
		b.e.t.Fatalf("start %s: %d %s", body, st, raw)
	}
	return cmd
}

// output polls bash_events/search until the command's BashOutput has an exit code.
func (b *bashClient) output(commandID string) bashEvent {
	b.e.t.Helper()
	q := url.Values{"command_id__eq": {commandID}, "kind__eq": {"BashOutput"}}
	deadline := time.Now().Add(60 * time.Second)
	var last []byte
	for {
		st, raw := b.e.callAt("GET", b.host+"/api/bash/bash_events/search?"+q.Encode(), b.key, nil)
		var page struct {
			Items []bashEvent `json:"items"`
		}
		if st != http.StatusOK || json.Unmarshal(raw, &page) != nil {
			b.e.t.Fatalf("search: %d %s", st, raw)
		}
		for _, ev := range page.Items {
			if ev.ExitCode != nil {
				return ev
			}
		}
		last = raw
		if time.Now().After(deadline) {
			b.e.t.Fatalf("command %s has no exit code after 60s; last page: %s", commandID, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAgentServerBaseBash follows the SDK's RemoteWorkspace running commands: start one,
// poll its events until its output has an exit code.
func TestAgentServerBaseBash(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	const token = "bash-route-PLAINTEXT-4711"
	c := e.startAgent(alice, map[string]any{
		"initial_message": message("hello", false),
		"secrets":         map[string]any{"BASH_TOKEN": token},
	})
	host, _, ok := strings.Cut(c.url, "/api/conversations/")
	if !ok {
		t.Fatalf("conversation_url %s", c.url)
	}
	b := &bashClient{e: e, host: host, key: http.Header{"X-Session-API-Key": {c.sessionKey}}}

	t.Run("output and exit code", func(t *testing.T) {
		e := e.in(t)
		b := b.in(t)
		cmd := b.start(`{"command": "echo $((6*7)); echo ` + token + `; echo warn >&2", "timeout": 60}`)
		out := b.output(cmd.ID)
		if *out.ExitCode != 0 || *out.Stdout != "42\n<secret-hidden>\n" || *out.Stderr != "warn\n" || out.CommandID != cmd.ID {
			t.Fatalf("output %+v: stdout %q stderr %q", out, *out.Stdout, *out.Stderr)
		}
		st, raw := e.callAt("GET", host+"/api/bash/bash_events/"+out.ID, b.key, nil)
		if st != http.StatusOK || !strings.Contains(string(raw), `"kind":"BashOutput"`) || strings.Contains(string(raw), token) {
			t.Fatalf("get the output event: %d %s", st, raw)
		}
		if st, raw := e.callAt("GET", host+"/api/bash/bash_events/nope", b.key, nil); st != http.StatusNotFound {
			t.Fatalf("unknown event: %d %s", st, raw)
		}
	})

	t.Run("non-zero exit", func(t *testing.T) {
		b := b.in(t)
		out := b.output(b.start(`{"command": "echo failing; exit 7"}`).ID)
		if *out.ExitCode != 7 || *out.Stdout != "failing\n" {
			t.Fatalf("output %+v", out)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		b := b.in(t)
		cmd := b.start(`{"command": "echo begun; sleep 600", "timeout": 1}`)
		out := b.output(cmd.ID)
		if *out.ExitCode != -1 || !strings.Contains(*out.Stderr, "timeout") {
			t.Fatalf("output %+v: stdout %q stderr %q", out, *out.Stdout, *out.Stderr)
		}
	})

	t.Run("execute waits", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		h := http.Header{"Content-Type": {"application/json"}, "X-Session-API-Key": {c.sessionKey}}
		st, raw := e.callAt("POST", host+"/api/bash/execute_bash_command", h, strings.NewReader(`{"command": "echo done"}`))
		var out bashEvent
		if st != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.ExitCode == nil || *out.ExitCode != 0 || *out.Stdout != "done\n" {
			t.Fatalf("execute: %d %s", st, raw)
		}
	})

	t.Run("bad body", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		b := b.in(t)
		h := http.Header{"Content-Type": {"application/json"}, "X-Session-API-Key": {c.sessionKey}}
		for _, body := range []string{`{}`, `{"command": ""}`, `{"command": "true", "timeout": 0}`, `{"command": "true", "cwd": "/no/such/dir"}`, `not json`} {
			st, raw := e.callAt("POST", host+"/api/bash/start_bash_command", h, strings.NewReader(body))
			if st != http.StatusUnprocessableEntity || !strings.Contains(string(raw), `"detail"`) {
				t.Errorf("%s: %d %s, want 422 saying what is wrong", body, st, raw)
			}
		}
		if st, raw := e.callAt("GET", host+"/api/bash/bash_events/search?sort_order=SIDEWAYS", b.key, nil); st != http.StatusUnprocessableEntity {
			t.Errorf("bad sort order: %d %s", st, raw)
		}
	})

	t.Run("the prefix serves the same events", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		var page struct {
			Items []bashEvent `json:"items"`
		}
		e.must("GET", "/agent-server/"+c.sandboxID+"/api/bash/bash_events/search?kind__eq=BashCommand", c.sessionKey, nil, http.StatusOK, &page)
		if len(page.Items) < 4 {
			t.Fatalf("%d commands at the prefix, want the 4 run above at least", len(page.Items))
		}
	})
}

// TestAgentServerBaseFileByPath: the upload and download routes that take the path in the
// URL, as older agent servers had them.
func TestAgentServerBaseFileByPath(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	c := e.startWorkspaceConv(alice)
	host, _, _ := strings.Cut(c.url, "/api/conversations/")

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "p.txt")
	fw.Write([]byte("by path"))
	mw.Close()
	target := url.PathEscape(path.Join(c.ws, "bypath/p.txt"))
	up := http.Header{"X-Session-API-Key": {c.sessionKey}, "Content-Type": {mw.FormDataContentType()}}
	if st, b := e.callAt("POST", host+"/api/file/upload/"+target, up, &body); st != http.StatusOK {
		t.Fatalf("upload: %d %s", st, b)
	}
	if st, b := e.callAt("GET", host+"/api/file/download/"+target, http.Header{"X-Session-API-Key": {c.sessionKey}}, nil); st != http.StatusOK || string(b) != "by path" {
		t.Fatalf("download: %d %q", st, b)
	}
}
