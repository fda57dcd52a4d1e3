package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// client calls a server's HTTP API with one API key.
type client struct {
	t   *testing.T
	s   *server
	key string
	hc  *http.Client
}

func (s *server) client(key string) *client {
	return &client{t: s.t, s: s, key: key, hc: &http.Client{Timeout: time.Minute}}
}

// call sends body (JSON, if not nil) and returns the status and the answer's body.
func (c *client) call(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.s.url+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("X-Session-API-Key", c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	return resp.StatusCode, data
}

// do is call that insists on status want and decodes the answer into out (if not nil).
func (c *client) do(method, path string, body any, want int, out any) []byte {
	c.t.Helper()
	status, data := c.call(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

// The parts of the API's answers the tests look at.

type userInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	IsAdmin bool   `json:"is_admin"`
}

type sandboxInfo struct {
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	SessionAPIKey *string `json:"session_api_key"`
	Detail        *string `json:"detail"`
}

type startTask struct {
	ID                string  `json:"id"`
	Status            string  `json:"status"`
	Detail            *string `json:"detail"`
	AppConversationID *string `json:"app_conversation_id"`
	SandboxID         *string `json:"sandbox_id"`
}

// newUser creates a user through the admin API (c is an admin's client) and returns a key of
// theirs.
func (c *client) newUser(name string) string {
	c.t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	c.do("POST", "/api/v1/users", map[string]any{"name": name}, http.StatusCreated, &u)
	var k struct {
		Key string `json:"key"`
	}
	c.do("POST", "/api/keys", map[string]any{"name": name, "user_id": u.ID}, http.StatusCreated, &k)
	return k.Key
}

func (c *client) me() userInfo {
	c.t.Helper()
	var u userInfo
	c.do("GET", "/api/v1/users/me", nil, http.StatusOK, &u)
	return u
}

// sandbox returns the caller's sandbox with that id.
func (c *client) sandbox(id string) sandboxInfo {
	c.t.Helper()
	var got []*sandboxInfo
	c.do("GET", "/api/v1/sandboxes?id="+url.QueryEscape(id), nil, http.StatusOK, &got)
	if len(got) != 1 || got[0] == nil {
		c.t.Fatalf("sandbox %s: got %v", id, got)
	}
	return *got[0]
}

// startSandbox starts a sandbox from the default spec and waits for it to be RUNNING.
func (c *client) startSandbox() sandboxInfo {
	c.t.Helper()
	var sb sandboxInfo
	c.do("POST", "/api/v1/sandboxes", nil, http.StatusOK, &sb)
	return c.waitSandbox(sb.ID, "RUNNING")
}

// waitSandbox waits (bounded) for sandbox id to reach status.
func (c *client) waitSandbox(id, status string) sandboxInfo {
	c.t.Helper()
	var sb sandboxInfo
	waitFor(c.t, 20*time.Second, "sandbox "+id+" "+status, func() (bool, string) {
		sb = c.sandbox(id)
		return sb.Status == status, "status " + sb.Status
	})
	return sb
}

func (c *client) task(id string) startTask {
	c.t.Helper()
	var got []*startTask
	c.do("GET", "/api/v1/app-conversations/start-tasks?ids="+url.QueryEscape(id), nil, http.StatusOK, &got)
	if len(got) != 1 || got[0] == nil {
		c.t.Fatalf("start task %s: got %v", id, got)
	}
	return *got[0]
}

// waitTaskReady waits (bounded) for start task id to be READY; ERROR fails at once.
func (c *client) waitTaskReady(id string) startTask {
	c.t.Helper()
	var task startTask
	waitFor(c.t, 20*time.Second, "start task "+id+" READY", func() (bool, string) {
		task = c.task(id)
		if task.Status == "ERROR" {
			c.t.Fatalf("start task %s failed: %v", id, deref(task.Detail))
		}
		return task.Status == "READY", "status " + task.Status
	})
	return task
}

// startConversationV1 starts a V1 conversation and returns its start task at once.
func (c *client) startConversationV1(text string) startTask {
	c.t.Helper()
	var task startTask
	body := map[string]any{"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}}
	c.do("POST", "/api/v1/app-conversations", body, http.StatusOK, &task)
	if task.ID == "" {
		c.t.Fatal("start task without an id")
	}
	return task
}

// createConversationV0 creates a V0 conversation and returns its id at once.
func (c *client) createConversationV0(text string) string {
	c.t.Helper()
	var resp struct {
		Status         string `json:"status"`
		ConversationID string `json:"conversation_id"`
	}
	c.do("POST", "/api/conversations", map[string]any{"initial_user_msg": text}, http.StatusOK, &resp)
	if resp.Status != "ok" || resp.ConversationID == "" {
		c.t.Fatalf("create V0 conversation: %+v", resp)
	}
	return resp.ConversationID
}

// tasksOf returns the caller's start tasks by conversation id.
func (c *client) tasksOf() map[string]startTask {
	c.t.Helper()
	var page struct {
		Items []struct {
			startTask
			Request json.RawMessage `json:"request"`
		} `json:"items"`
	}
	c.do("GET", "/api/v1/app-conversations/start-tasks/search", nil, http.StatusOK, &page)
	out := map[string]startTask{}
	for _, it := range page.Items {
		if it.AppConversationID != nil {
			out[*it.AppConversationID] = it.startTask
		}
	}
	return out
}

// runtimeClient returns a client for the runtime of the caller's RUNNING sandbox id, on its
// unix socket, with the key the API hands out.
func (c *client) runtimeClient(id string) *runtimeclient.Client {
	c.t.Helper()
	sb := c.sandbox(id)
	if sb.Status != "RUNNING" || sb.SessionAPIKey == nil {
		c.t.Fatalf("sandbox %s: status %s, session key %v", id, sb.Status, sb.SessionAPIKey)
	}
	rc, err := runtimeclient.NewClient("unix:"+socketPath(c.s.dir, id), *sb.SessionAPIKey)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(rc.CloseIdleConnections)
	return rc
}

// socketPath is where the process backend puts sandbox id's runtime socket.
func socketPath(dir, id string) string {
	return filepath.Join(dir, "sandboxes", "process", id, "runtime.sock")
}

// runtimePID finds the runtime of sandbox id by its command line.
func runtimePID(t *testing.T, dir, id string) int {
	t.Helper()
	pids := runtimeLeaders(socketPath(dir, id))
	if len(pids) != 1 {
		t.Fatalf("runtime of sandbox %s: found pids %v", id, pids)
	}
	return pids[0]
}

// canonical re-encodes a JSON document so that equal documents compare equal as strings.
func canonical(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// itemsByID picks from a page's list (under key) the items whose idKey is one of ids, each
// canonically encoded.
func itemsByID(t *testing.T, data []byte, key, idKey string, ids []string) map[string]string {
	t.Helper()
	var page map[string]json.RawMessage
	if err := json.Unmarshal(data, &page); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(page[key], &items); err != nil {
		t.Fatalf("decode %s of %s: %v", key, data, err)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]string{}
	for _, it := range items {
		var id string
		_ = json.Unmarshal(it[idKey], &id)
		if want[id] {
			b, _ := json.Marshal(it)
			out[id] = canonical(t, b)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// runtimeCommand is a bounded command for a sandbox's runtime.
func runtimeCommand(command string) runtimeclient.CommandRequest {
	return runtimeclient.CommandRequest{Command: command, TimeoutSeconds: 10}
}
