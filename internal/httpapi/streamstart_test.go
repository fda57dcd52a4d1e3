package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitproxy/gittest"
)

// streamStart posts a stream-start request and returns the open answer.
func (e *env) streamStart(key string, body any) *http.Response {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(e.t.Context(), "POST", e.srv.URL+"/api/v1/app-conversations/stream-start", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Session-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// streamReader reads the elements of a stream-start answer as they come.
type streamReader struct {
	t   *testing.T
	dec *json.Decoder
}

func newStreamReader(t *testing.T, r io.Reader) *streamReader {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("the answer does not open an array: %v %v", tok, err)
	}
	return &streamReader{t: t, dec: dec}
}

// next returns the next task; false at the end of the array.
func (s *streamReader) next() (v1Task, bool) {
	s.t.Helper()
	if !s.dec.More() {
		if tok, err := s.dec.Token(); err != nil || tok != json.Delim(']') {
			s.t.Fatalf("the array does not close: %v %v", tok, err)
		}
		return v1Task{}, false
	}
	var task v1Task
	if err := s.dec.Decode(&task); err != nil {
		s.t.Fatalf("stream element: %v", err)
	}
	return task, true
}

// TestStreamStart: stream-start answers a JSON array of the start task's states as they are
// saved, in OpenHands' framing, the first element WORKING, the last READY with the
// conversation; each arrives when its step begins, not at the end.
func TestStreamStart(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	if err := e.git.Create("octo/gate", gittest.Commit{Files: map[string]string{
		".openhands/setup.sh": "until [ -e ../go-on ]; do sleep 0.02; done\n",
	}}); err != nil {
		t.Fatal(err)
	}
	e.repo(alice, "github", "octo/gate")

	resp := e.streamStart(alice, map[string]any{"selected_repository": "octo/gate", "git_provider": "github"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("stream-start answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var raw bytes.Buffer
	s := newStreamReader(t, io.TeeReader(bufio.NewReader(resp.Body), &raw))
	var statuses []string
	var last v1Task
	for {
		task, ok := s.next()
		if !ok {
			break
		}
		if last.ID != "" && task.ID != last.ID {
			t.Fatalf("elements of two tasks: %s and %s", last.ID, task.ID)
		}
		last = task
		statuses = append(statuses, task.Status)
		if task.Status == "RUNNING_SETUP_SCRIPT" {
			// The stream told the step while it runs; the step waits for this file.
			if task.SandboxID == nil {
				t.Fatal("RUNNING_SETUP_SCRIPT without a sandbox")
			}
			if err := os.WriteFile(filepath.Join(e.projectDir(*task.SandboxID), "go-on"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if statuses[0] != "WORKING" || last.Status != "READY" || last.AppConversationID == nil {
		t.Fatalf("states %v, last %+v: want WORKING first and READY with the conversation last", statuses, last)
	}
	for _, want := range []string{"WAITING_FOR_SANDBOX", "PREPARING_REPOSITORY", "RUNNING_SETUP_SCRIPT", "SETTING_UP_GIT_HOOKS", "STARTING_CONVERSATION"} {
		if !slices.Contains(statuses, want) {
			t.Errorf("states %v lack %s", statuses, want)
		}
	}
	// OpenHands' framing: "[\n", elements separated by ",\n", then "]".
	text := raw.String()
	if !strings.HasPrefix(text, "[\n{") || !strings.HasSuffix(text, "}]") || strings.Count(text, "},\n{") != len(statuses)-1 {
		t.Errorf("framing of %q", text)
	}
	if got := e.getTask(alice, last.ID); got == nil || got.Status != "READY" {
		t.Errorf("the stored task: %+v", got)
	}
	e.settleAgent(alice, *last.AppConversationID)
}

// TestStreamStartErrors: a start that fails ends the array with its ERROR; a request that
// cannot start answers as POST /api/v1/app-conversations does, before any stream.
func TestStreamStartErrors(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.repo(alice, "github", "octo/plain")
	resp := e.streamStart(alice, map[string]any{"selected_repository": "octo/plain", "git_provider": "github", "selected_branch": "no-such-branch"})
	s := newStreamReader(t, resp.Body)
	var last v1Task
	for {
		task, ok := s.next()
		if !ok {
			break
		}
		last = task
	}
	if last.Status != "ERROR" || last.Detail == nil || !strings.Contains(*last.Detail, "no-such-branch") {
		t.Errorf("last state %+v, want ERROR naming the branch", last)
	}

	for _, tc := range []struct {
		name string
		body any
		want int
	}{
		{"unknown field", map[string]any{"colour": "blue"}, http.StatusUnprocessableEntity},
		{"unknown sandbox", map[string]any{"sandbox_id": "nope"}, http.StatusUnprocessableEntity},
		{"not JSON", "[", http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/app-conversations/stream-start", alice, tc.body)
			if status != tc.want || !strings.Contains(string(body), `"detail"`) {
				t.Errorf("%d %s, want %d with a detail", status, body, tc.want)
			}
		})
	}
	if status, _ := e.call("POST", "/api/v1/app-conversations/stream-start", "", map[string]any{}); status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", status)
	}
	var n int
	e.must("GET", "/api/v1/app-conversations/start-tasks/count", alice, nil, http.StatusOK, &n)
	if n != 1 {
		t.Errorf("%d start tasks, want only the failed one", n)
	}
}
