package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestRequestIDs: every answer carries a request id, a sane one sent by the client (or a
// proxy) is kept, anything else is replaced; the request's log lines name it, with the
// conversation and sandbox the request is about, and so do the lines of the start it began.
func TestRequestIDs(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	send := func(method, path, key, rid string, body any) *http.Response {
		t.Helper()
		var rd io.Reader
		if body != nil {
			data, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequest(method, e.srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Session-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		if rid != "" {
			req.Header["X-Request-ID"] = []string{rid}
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"none", "", false},
		{"a UUID", "0b6c1a52-5b1e-4d4f-9c55-3a0c8e1f2d11", true},
		{"a trace id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"base64", "cmVxdWVzdCBvbmU=", true},
		{"spaces", "one two", false},
		{"a forged log line", "x\" level=ERROR msg=\"forged", false},
		{"too long", strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := send("GET", "/api/v1/users/me", alice, tc.sent, nil)
			got := resp.Header.Get("X-Request-ID")
			if tc.kept && got != tc.sent {
				t.Fatalf("sent %q, answered %q", tc.sent, got)
			}
			if !tc.kept && !generated.MatchString(got) {
				t.Fatalf("sent %q, answered %q, want a generated id", tc.sent, got)
			}
		})
	}
	// Errors and unknown routes carry one too.
	if resp := send("GET", "/api/nothing-here", alice, "", nil); resp.StatusCode != 404 || resp.Header.Get("X-Request-ID") == "" {
		t.Fatalf("404 answer: %d, request id %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}

	resp := send("POST", "/api/v1/app-conversations", alice, "create-1", map[string]any{"initial_message": message("Hi.", false)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	e.eventually("the start to log the sandbox it started", func() bool {
		return strings.Contains(e.logs.String(), `msg="sandbox starting"`)
	})
	line := func(msg string) string {
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, "msg="+msg) && strings.Contains(l, "request_id=create-1") {
				return l
			}
		}
		t.Fatalf("no %s line with the request id in the log:\n%s", msg, e.logs.String())
		return ""
	}
	created := line(`request `)
	m := regexp.MustCompile(`conversation_id=([0-9a-f]+)`).FindStringSubmatch(created)
	if m == nil || !strings.Contains(created, "path=/api/v1/app-conversations") {
		t.Fatalf("the request line names no conversation: %s", created)
	}
	started := line(`"sandbox starting"`)
	if !strings.Contains(started, "conversation_id="+m[1]) || !strings.Contains(started, "task_id=") {
		t.Fatalf("the sandbox's start is not tied to the conversation %s: %s", m[1], started)
	}
	sb := regexp.MustCompile(`sandbox_id=([0-9a-f]+)`).FindStringSubmatch(started)
	if sb == nil {
		t.Fatalf("no sandbox id: %s", started)
	}

	// A request about the conversation names it and its sandbox.
	send("GET", "/api/conversations/"+m[1], alice, "get-1", nil)
	e.eventually("the request line", func() bool { return strings.Contains(e.logs.String(), "request_id=get-1") })
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "request_id=get-1") && !strings.Contains(l, "conversation_id="+m[1]) {
			t.Fatalf("a line of the request does not name its conversation: %s", l)
		}
	}
}
