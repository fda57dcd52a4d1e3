package main_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// cliUser runs the client commands of the binary as one user would: with a configuration
// directory of their own and no AGENTD_URL or AGENTD_API_KEY unless a call adds them.
type cliUser struct {
	t      *testing.T
	config string // XDG_CONFIG_HOME
}

func newCLIUser(t *testing.T) *cliUser {
	return &cliUser{t: t, config: t.TempDir()}
}

// run runs agentd with args, stdin and extra environment, to its end (bounded).
func (u *cliUser) run(stdin string, env []string, args ...string) (stdout, stderr string, code int) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentdBin, args...)
	cmd.Env = testEnv(append([]string{"XDG_CONFIG_HOME=" + u.config, "HOME=" + u.config, "NO_COLOR="}, env...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		u.t.Fatalf("agentd %s did not finish\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), &out, &errOut)
	}
	if err != nil && exitCode(err) < 0 {
		u.t.Fatalf("agentd %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), exitCode(err)
}

// must runs agentd and fails the test unless it exits with want.
func (u *cliUser) must(want int, args ...string) string {
	u.t.Helper()
	out, errOut, code := u.run("", nil, args...)
	if code != want {
		u.t.Fatalf("agentd %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// TestCLI drives the client commands of the real binary against a started server: login,
// a conversation created and followed until the agent finishes (exit 0) and until it fails
// (exit 5), the listings in both output forms, the exit codes of refusals, completions.
func TestCLI(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + agentAdminKey})
	u := newCLIUser(t)

	// Before login there is no key: exit 4, saying what to do.
	if _, errOut, code := u.run("", []string{"AGENTD_URL=" + s.url}, "conversations", "list"); code != 4 || !strings.Contains(errOut, "agentd login") {
		t.Fatalf("list before login: exit %d, %s", code, errOut)
	}
	// A wrong key is refused by the server, and nothing is saved.
	if _, errOut, code := u.run("wrong-key\n", nil, "login", s.url, "--api-key-stdin"); code != 4 {
		t.Fatalf("login with a wrong key: exit %d, %s", code, errOut)
	}
	out, errOut, code := u.run(agentAdminKey+"\n", nil, "login", s.url, "--api-key-stdin")
	if code != 0 || !strings.Contains(out, "Logged in to "+s.url) {
		t.Fatalf("login: exit %d\n%s%s", code, out, errOut)
	}
	saved := filepath.Join(u.config, "agentd", "cli.json")
	fi, err := os.Stat(saved)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved login: %v, %v; want mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(saved); !strings.Contains(string(b), agentAdminKey) || !strings.Contains(string(b), s.url) {
		t.Fatalf("saved login holds %s", b)
	}

	// A conversation followed until the agent finishes: its command and output, its file
	// edit as a diff, its answer.
	var workspace atomic.Value
	workspace.Store("")
	model := llmtest.NewOpenAI(t,
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if m := workspaceRE.FindStringSubmatch(req.System); m != nil {
				workspace.Store(m[1])
			}
			return llmtest.Calls(llmtest.Call("terminal", `{"command":"echo hello from the sandbox"}`))
		}},
		llmtest.Step{Func: func(llmtest.RecordedRequest) llmtest.Step {
			args, _ := json.Marshal(map[string]string{"command": "create", "path": filepath.Join(workspace.Load().(string), "notes.txt"), "file_text": "first line\n"})
			return llmtest.Calls(llm.ToolCall{Name: "file_editor", Arguments: string(args)})
		}},
		llmtest.Text("All done: notes.txt is written."),
		// The answer to a message sent to the finished conversation.
		llmtest.Text("It holds one line."),
		// The second conversation: the model refuses the key.
		llmtest.Fail(http.StatusUnauthorized, "Incorrect API key provided"),
	)
	u.must(0, "settings", "set", "llm_model=gpt-4o", "llm_base_url="+model.URL(), "llm_api_key="+llmtest.APIKey)
	if out := u.must(0, "settings", "get", "llm_model", "--json"); !strings.Contains(out, `"gpt-4o"`) {
		t.Fatalf("settings get: %s", out)
	}
	out, errOut, code = u.run("", nil, "conversations", "create", "--title", "CLI test", "--message", "Say hello and write notes.txt.", "--follow")
	if code != 0 {
		t.Fatalf("create --follow: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"you: Say hello and write notes.txt.", "$ echo hello from the sandbox", "  hello from the sandbox",
		"✎ create " + workspace.Load().(string) + "/notes.txt", "+first line", "agent: All done: notes.txt is written.", "— agent finished —"} {
		if !strings.Contains(out, want) {
			t.Errorf("the followed conversation lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colours on a pipe:\n%s", out)
	}

	// A message to the finished agent, followed: the answer is streamed (not only the idle
	// the message is first recorded with), and nothing from before it is shown again.
	out, errOut, code = u.run("", nil, "conversations", "send", firstConversation(t, u), "What is in notes.txt?", "--follow")
	if code != 0 || !strings.Contains(out, "agent: It holds one line.") || strings.Contains(out, "All done") {
		t.Fatalf("send --follow: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// The same conversation's events as JSON lines, each an event of the log.
	jsonOut := u.must(0, "events", firstConversation(t, u), "--json")
	lines := strings.Split(strings.TrimSpace(jsonOut), "\n")
	kinds := map[string]bool{}
	for _, l := range lines {
		var ev struct{ Kind, ID string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ID == "" {
			t.Fatalf("events --json line %q: %v", l, err)
		}
		kinds[ev.Kind] = true
	}
	for _, k := range []string{"MessageEvent", "ActionEvent", "ObservationEvent", "ConversationStateUpdateEvent"} {
		if !kinds[k] {
			t.Errorf("events --json lacks a %s", k)
		}
	}

	// A conversation whose agent ends in error: exit 5.
	out, errOut, code = u.run("", nil, "conversations", "create", "--message", "Try again.", "--follow", "--json")
	if code != 5 || !strings.Contains(errOut, "the agent stopped: error") {
		t.Fatalf("create --follow of a failing agent: exit %d, want 5\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("--follow --json printed a line that is not JSON: %q", l)
		}
	}

	// Listings, for people and for scripts.
	table := u.must(0, "conversations", "list")
	if !strings.HasPrefix(table, "ID ") || !strings.Contains(table, "CLI test") || !strings.Contains(table, "finished") {
		t.Fatalf("conversations list:\n%s", table)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(u.must(0, "conversations", "list", "--json")), "\n") {
		var c struct {
			ID              string `json:"id"`
			ExecutionStatus string `json:"execution_status"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("conversations list --json line %q: %v", l, err)
		}
		ids = append(ids, c.ID)
	}
	if len(ids) != 2 {
		t.Fatalf("conversations list --json: %d conversations, want 2", len(ids))
	}
	if out := u.must(0, "sandboxes", "list"); !strings.Contains(out, "RUNNING") {
		t.Fatalf("sandboxes list:\n%s", out)
	}
	if out := u.must(0, "specs", "list"); !strings.Contains(out, "default") {
		t.Fatalf("specs list:\n%s", out)
	}
	if out := u.must(0, "users", "list", "--json"); !strings.Contains(out, `"is_admin":true`) {
		t.Fatalf("users list --json:\n%s", out)
	}

	// Exit codes of refusals.
	u.must(3, "conversations", "get", "0123456789abcdef0123456789abcdef")
	if _, _, code := u.run("", []string{"AGENTD_API_KEY=wrong"}, "conversations", "list"); code != 4 {
		t.Fatalf("a wrong key from the environment: exit %d, want 4", code)
	}
	u.must(2, "conversations", "get")
	u.must(2, "conversations", "list", "--frobnicate")
	u.must(2, "conversations", "frobnicate")

	// Keys: created (shown once), listed, revoked; the revoked key is refused.
	key := strings.TrimSpace(u.must(0, "keys", "create", "ci"))
	if !generatedKey.MatchString(key) {
		t.Fatalf("keys create printed %q", key)
	}
	if _, _, code := u.run("", []string{"AGENTD_API_KEY=" + key}, "conversations", "list"); code != 0 {
		t.Fatalf("the new key: exit %d", code)
	}
	var keyID string
	for _, l := range strings.Split(strings.TrimSpace(u.must(0, "keys", "list", "--json")), "\n") {
		var k struct{ ID, Name string }
		_ = json.Unmarshal([]byte(l), &k)
		if k.Name == "ci" {
			keyID = k.ID
		}
	}
	u.must(0, "keys", "revoke", keyID)
	if _, _, code := u.run("", []string{"AGENTD_API_KEY=" + key}, "conversations", "list"); code != 4 {
		t.Fatalf("a revoked key: exit %d, want 4", code)
	}

	// Completion scripts.
	for shell, want := range map[string]string{"bash": "__start_agentd", "zsh": "#compdef agentd", "fish": "complete -c agentd"} {
		if out := u.must(0, "completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	if out := u.must(0, "conversations", "create", "--help"); !strings.Contains(out, "--follow") {
		t.Errorf("create --help:\n%s", out)
	}
}

// firstConversation is the id of the user's oldest conversation.
func firstConversation(t *testing.T, u *cliUser) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(u.must(0, "conversations", "list", "--json")), "\n")
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &c); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// hookReceiver is a webhook endpoint on loopback that keeps what it gets and answers with
// status.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []hookRequest
	status int
	// hold, while not nil, keeps requests unanswered until it is closed or the client leaves.
	hold chan struct{}
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	r := &hookReceiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookRequest{req.Header.Clone(), body})
		status, hold := r.status, r.hold
		r.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) requests() []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookRequest(nil), r.got...)
}

// verifyDelivery is the recipe of docs/api.md: HMAC-SHA256, keyed with the secret, of
// "<X-Agentd-Timestamp>.<body>", hex after "sha256=", compared in constant time.
func verifyDelivery(secret string, h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(h.Get("X-Agentd-Timestamp")))
	mac.Write([]byte("."))
	mac.Write(body)
	expected := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(expected), []byte(h.Get("X-Agentd-Signature")))
}

// TestWebhooks: a user's webhook on loopback gets signed deliveries of their conversation's
// creation and end (with the agent's final message) that verify; one that keeps failing is
// retried, then marked failed, and listed so; a restart of the server during the retries
// of another delivers it once, under its id.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + agentAdminKey}
	args := []string{"--allow-internal", "127.0.0.1", "--webhook-first-retry", "20ms", "--webhook-retry-for", "3s", "--webhook-timeout", "5s"}
	s := startServer(t, dir, env, args...)
	admin := s.client(agentAdminKey)
	var bob userInfo
	admin.do("POST", "/api/v1/users", map[string]any{"name": "bob"}, http.StatusCreated, &bob)
	var bobKey struct {
		Key string `json:"key"`
	}
	admin.do("POST", "/api/keys", map[string]any{"name": "bob's", "user_id": bob.ID}, http.StatusCreated, &bobKey)
	u := newCLIUser(t)
	if _, errOut, code := u.run(bobKey.Key+"\n", nil, "login", s.url, "--api-key-stdin"); code != 0 {
		t.Fatalf("login: %s", errOut)
	}

	good, failing := newHookReceiver(t, http.StatusOK), newHookReceiver(t, http.StatusInternalServerError)
	// Bob is no admin: his webhook on loopback is his only because the allow-list admits it.
	secret := strings.TrimSpace(u.must(0, "webhooks", "create", good.URL+"/hook", "--events", "conversation.created,conversation.finished"))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("webhooks create printed %q", secret)
	}
	u.must(0, "webhooks", "create", failing.URL, "--events", "conversation.created")
	var hooks []struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	for _, l := range strings.Split(strings.TrimSpace(u.must(0, "webhooks", "list", "--json")), "\n") {
		var h struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, h)
	}
	if len(hooks) != 2 || strings.Contains(u.must(0, "webhooks", "list", "--json"), "whsec_") {
		t.Fatalf("webhooks list: %+v", hooks)
	}

	// The server-wide model answers "OK." at once: the conversation finishes.
	out, errOut, code := u.run("", nil, "conversations", "create", "--message", "Hello", "--follow")
	if code != 0 {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	waitFor(t, 30*time.Second, "the created and finished deliveries", func() (bool, string) {
		return len(good.requests()) >= 2, ""
	})
	byEvent := map[string]map[string]any{}
	for _, r := range good.requests() {
		if !verifyDelivery(secret, r.header, r.body) {
			t.Fatalf("a delivery does not verify: %v %s", r.header, r.body)
		}
		var p struct {
			ID    string         `json:"id"`
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil || p.ID != r.header.Get("X-Agentd-Delivery") || p.Event != r.header.Get("X-Agentd-Event") {
			t.Fatalf("delivery %v %s", r.header, r.body)
		}
		byEvent[p.Event] = p.Data
	}
	if f := byEvent["conversation.finished"]; f == nil || f["final_message"] != "OK." || f["conversation_id"] == "" {
		t.Fatalf("finished delivery: %v", byEvent)
	}
	if c := byEvent["conversation.created"]; c == nil || c["conversation_id"] != byEvent["conversation.finished"]["conversation_id"] {
		t.Fatalf("created delivery: %v", byEvent)
	}

	// The failing endpoint is retried, then its delivery is failed.
	var failingID string
	for _, h := range hooks {
		if h.URL == failing.URL {
			failingID = h.ID
		}
	}
	var failed struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		Attempts     int    `json:"attempts"`
		ResponseCode int    `json:"response_code"`
	}
	waitFor(t, 60*time.Second, "the failing delivery to be failed", func() (bool, string) {
		out := strings.TrimSpace(u.must(0, "webhooks", "deliveries", failingID, "--json"))
		_ = json.Unmarshal([]byte(out), &failed)
		return failed.Status == "failed", out
	})
	if failed.Attempts < 2 || failed.ResponseCode != 500 || len(failing.requests()) != failed.Attempts {
		t.Fatalf("failed delivery %+v after %d requests", failed, len(failing.requests()))
	}
	if table := u.must(0, "webhooks", "deliveries", failingID); !strings.Contains(table, "failed") || !strings.Contains(table, "500") {
		t.Fatalf("deliveries table:\n%s", table)
	}

	// A restart in the middle of an attempt: the endpoint holds the redelivery while the
	// server stops, then takes it from the restarted server, under the same id.
	hold := make(chan struct{})
	failing.mu.Lock()
	failing.got, failing.hold = nil, hold
	failing.mu.Unlock()
	u.must(0, "webhooks", "redeliver", failingID, failed.ID)
	waitFor(t, 30*time.Second, "an attempt of the redelivery", func() (bool, string) { return len(failing.requests()) >= 1, "" })
	if code, _ := s.stop(); code != 0 {
		t.Fatalf("server exited %d", code)
	}
	failing.mu.Lock()
	failing.status, failing.hold = http.StatusOK, nil
	failing.mu.Unlock()
	close(hold)
	s = startServer(t, dir, env, args...)
	if _, errOut, code := u.run(bobKey.Key+"\n", nil, "login", s.url, "--api-key-stdin"); code != 0 { // the new port
		t.Fatalf("login again: %s", errOut)
	}
	var after struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	}
	waitFor(t, 60*time.Second, "the redelivery to arrive after the restart", func() (bool, string) {
		out := strings.TrimSpace(u.must(0, "webhooks", "deliveries", failingID, "--json"))
		_ = json.Unmarshal([]byte(out), &after)
		return after.Status == "delivered", out
	})
	ids := map[string]bool{}
	delivered := 0
	for _, r := range failing.requests() {
		ids[r.header.Get("X-Agentd-Delivery")] = true
	}
	for range ids {
		delivered++
	}
	if after.ID != failed.ID || delivered != 1 || !ids[failed.ID] {
		t.Fatalf("after the restart: delivery %+v; ids sent %v", after, ids)
	}
}
