package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// replicaLease is the conversation lease of the replicas tests: short, so that a takeover
// (or its absence) shows within seconds.
const replicaLease = "3s"

// startReplicas starts n replicas of agentd serve on one PostgreSQL database with one keyring,
// each on a data directory (and so a node) of its own, and returns them with their data
// directories and the environment they share.
func startReplicas(t *testing.T, n int, key string) ([]*server, []string, []string) {
	t.Helper()
	db := pgtest.Database(t)
	keyring := filepath.Join(t.TempDir(), "keyring.json")
	if _, stderr, code := runAgentd(t, nil, "keyring", "create", keyring); code != 0 {
		t.Fatalf("keyring create: %s", stderr)
	}
	env := []string{"AGENTD_ADMIN_KEY=" + key, "AGENTD_DATABASE=" + db, "AGENTD_KEYRING_FILE=" + keyring,
		"AGENTD_CONVERSATION_LEASE=" + replicaLease, slowCallEnv}
	var servers []*server
	var dirs []string
	for range n {
		dir := newDataDir(t)
		servers, dirs = append(servers, startServer(t, dir, env)), append(dirs, dir)
	}
	return servers, dirs, env
}

// streamEvent is what the replicas test reads of a streamed event.
type streamEvent struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// eventStream collects the events of a live stream in the background.
type eventStream struct {
	mu   sync.Mutex
	evs  []streamEvent
	err  error
	done chan struct{}
}

func (s *eventStream) add(ev streamEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

func (s *eventStream) events() []streamEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs)
}

// openSSE follows the conversation's SSE stream on s from its first event.
func openSSE(t *testing.T, s *server, key, convID string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/app-conversations/"+convID+"/events/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Session-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open the SSE stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open the SSE stream: %s", resp.Status)
	}
	st := &eventStream{done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		var data []byte
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				st.err = err
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0 && data != nil:
				var ev streamEvent
				if json.Unmarshal(data, &ev) == nil && ev.ID != "" && ev.Key != "full_state" {
					st.add(ev)
				}
				data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			}
		}
	}()
	return st
}

// openSocket follows the conversation's event socket on s (the main listener's
// /agent-server/{sandbox_id} prefix, with the owner's key) from its first event.
func openSocket(t *testing.T, s *server, key, sandboxID, convID string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(s.url, "http") + "/agent-server/" + sandboxID + "/sockets/events/" + convID + "?resend_all=true"
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"X-Session-API-Key": {key}}})
	if err != nil {
		t.Fatalf("open the event socket: %v", err)
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { c.CloseNow() })
	st := &eventStream{done: make(chan struct{})}
	go func() {
		defer close(st.done)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				st.err = err
				return
			}
			var ev streamEvent
			if json.Unmarshal(data, &ev) == nil && ev.ID != "" && ev.Key != "full_state" {
				st.add(ev)
			}
		}
	}()
	return st
}

// ids are the ids of evs.
func streamIDs(evs []streamEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestReplicas: three replicas on one database. A conversation created on the first is
// followed over SSE on the second and over the event socket on the third, and driven through
// the third: messages, a pause, a secret changed through the second. The first runs it, as
// its sandbox is on the first's node; the others leave it their commands. Killed with
// SIGKILL in the middle of a command, the first leaves a conversation that the others,
// which do not reach its sandbox, do not take over; restarted, it continues it from its log,
// answering the cut-off call, and the agent finishes. Every event reaches each stream once,
// in the log's order, and the model is asked for each step once.
func TestReplicas(t *testing.T) {
	t.Parallel()
	const key = "replicas-admin-key-0123456789"
	const token = "sekrit-changed-on-r2-7741"
	gate := make(chan struct{})
	// The command the first replica is killed in waits for this file, which only the end of
	// the test makes (or at most a minute): it runs until the kill however slow the machine.
	release := filepath.Join(t.TempDir(), "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	model := llmtest.NewOpenAI(t,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo hello-one"}`)),
		llmtest.Text("First answer."),
		// Asked through the third replica, run by the first, with a secret the second stored.
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo `+token+`"}`)),
		// The pause through the third replica interrupts this call.
		llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-gate:
			}
		}},
		// The first replica is killed while this command runs.
		llmtest.Calls(llmtest.Call("terminal", `{"command":"`+waitForFile(release)+`; echo slow"}`)),
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if last := req.Last(); last.Role != llm.RoleTool || !strings.Contains(last.Text(), "restart") {
				t.Errorf("after the restart the model was sent %+v, want the interrupted call's error", last)
			}
			return llmtest.Text("All done.")
		}},
	)
	defer close(gate)
	rs, dirs, env := startReplicas(t, 3, key)
	r1, r2, r3 := rs[0].client(key), rs[1].client(key), rs[2].client(key)
	r1.do("POST", "/api/settings", map[string]any{"llm_model": "gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey}, http.StatusOK, nil)

	task := r1.waitTaskReady(r1.startConversationV1("Say hello.").ID)
	conv, sandboxID := *task.AppConversationID, deref(task.SandboxID)
	sse := openSSE(t, rs[1], key, conv)
	ws := openSocket(t, rs[2], key, sandboxID, conv)
	waitFor(t, 60*time.Second, "the first answer", func() (bool, string) {
		got := logLabels(conversationLog(r2, conv))
		return slices.Contains(got, "execution_status=finished"), strings.Join(got, ",")
	})
	// The others do not take the first's sandbox for one that vanished.
	for _, c := range []*client{r2, r3} {
		if sb := c.sandbox(sandboxID); sb.Status != "RUNNING" {
			t.Fatalf("the first replica's sandbox reads %s on another replica", sb.Status)
		}
	}

	// A secret stored through the second replica, printed by a command the first runs.
	r2.do("POST", "/api/v1/secrets", map[string]any{"name": "R2_TOKEN", "value": token}, http.StatusCreated, nil)
	r3.do("POST", "/api/v1/app-conversations/"+conv+"/send-message", map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": "Print the token."}}, "run": true}, http.StatusOK, nil)
	waitFor(t, 60*time.Second, "the model call that hangs", func() (bool, string) {
		return len(model.Requests()) >= 4, fmt.Sprint(len(model.Requests()), " model calls")
	})
	r3.do("POST", "/agent-server/"+sandboxID+"/api/conversations/"+conv+"/pause", nil, http.StatusOK, nil)
	waitFor(t, 60*time.Second, "the pause", func() (bool, string) {
		got := logLabels(conversationLog(r3, conv))
		return got[len(got)-1] == "execution_status=paused", strings.Join(got, ",")
	})

	r3.do("POST", "/api/v1/app-conversations/"+conv+"/send-message", map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": "Go on."}}, "run": true}, http.StatusOK, nil)
	waitFor(t, 60*time.Second, "the slow command", func() (bool, string) {
		return len(model.Requests()) >= 5, fmt.Sprint(len(model.Requests()), " model calls")
	})
	waitFor(t, 60*time.Second, "the slow command to start", func() (bool, string) {
		got := logLabels(conversationLog(r3, conv))
		n := 0
		for _, l := range got {
			if l == "ActionEvent:terminal" {
				n++
			}
		}
		return n == 3, strings.Join(got, ",")
	})
	killed := time.Now()
	rs[0].kill()
	waitDataDirFree(t, dirs[0])

	// Once the first's lease lapsed, the others say that the conversation waits for its
	// node, and record nothing else: they do not reach its sandbox.
	stalled := conversationLog(r2, conv)
	var waiting []logEvent
	waitFor(t, 60*time.Second, "the conversation to say it waits for its node", func() (bool, string) {
		got := conversationLog(r2, conv)
		waiting = got[len(stalled):]
		return len(waiting) > 0, strings.Join(logLabels(got), ",")
	})
	if len(waiting) != 1 || waiting[0].Key != "waiting_for_node" || waiting[0].Value == nil {
		t.Fatalf("while the first replica was down (killed at %s): %s, want one waiting_for_node; the log:%s",
			killed.UTC().Format(time.RFC3339Nano), strings.Join(logLabels(waiting), ","), timeline(conversationLog(r2, conv)))
	}
	// The conversation itself says so, on every replica, in the listings too.
	waitingFor := func(c *client) []*string {
		type item struct {
			ID             string  `json:"id"`
			WaitingForNode *string `json:"waiting_for_node"`
		}
		var search struct {
			Items []item `json:"items"`
		}
		c.do("GET", "/api/v1/app-conversations/search?limit=100", nil, http.StatusOK, &search)
		i := slices.IndexFunc(search.Items, func(it item) bool { return it.ID == conv })
		var list []item
		c.do("GET", "/api/v1/app-conversations?ids="+conv, nil, http.StatusOK, &list)
		var v0 item
		c.do("GET", "/api/conversations/"+conv, nil, http.StatusOK, &v0)
		if len(list) != 1 || i < 0 {
			c.t.Fatalf("the conversation: %d items in the batch get, at %d in the search", len(list), i)
		}
		return []*string{search.Items[i].WaitingForNode, list[0].WaitingForNode, v0.WaitingForNode}
	}
	for _, c := range []*client{r2, r3} {
		for _, got := range waitingFor(c) {
			if got == nil || *got != waiting[0].Value {
				t.Fatalf("the conversation waits for node %v, says %v", waiting[0].Value, got)
			}
		}
	}

	rs[0] = startServer(t, dirs[0], env)
	waitFor(t, 60*time.Second, "the agent to finish", func() (bool, string) {
		got := logLabels(conversationLog(r3, conv))
		return got[len(got)-1] == "execution_status=finished" && len(model.Requests()) == 6, strings.Join(got, ",")
	})
	for _, got := range waitingFor(r2) {
		if got != nil {
			t.Fatalf("the conversation still waits for node %s", *got)
		}
	}

	log := conversationLog(r2, conv)
	want := make([]string, len(log))
	for i, ev := range log {
		want[i] = ev.ID
	}
	for name, st := range map[string]*eventStream{"SSE on the second replica": sse, "socket on the third replica": ws} {
		waitFor(t, 60*time.Second, name+" to have every event", func() (bool, string) {
			return len(st.events()) >= len(want), fmt.Sprintf("%d of %d", len(st.events()), len(want))
		})
		if got := streamIDs(st.events()); !slices.Equal(got, want) {
			t.Errorf("%s: %d events, want the log's %d in order, each once:\n got %v\nwant %v", name, len(got), len(want), got, want)
		}
	}
	for _, ev := range log {
		if b, _ := json.Marshal(ev); bytes.Contains(b, []byte(token)) {
			t.Errorf("the secret stored through the second replica is in an event the first recorded: %s", b)
		}
	}
	obs := conversationObservations(r2, conv)
	if !slices.ContainsFunc(obs, func(o string) bool { return strings.Contains(o, "echo "+secret.Mask) }) {
		t.Errorf("no observation shows the masked secret: %q", obs)
	}
	if n := len(model.Requests()); n != 6 {
		t.Errorf("%d model calls, want 6: each step once, the cut-off one again", n)
	}

	// A key revoked through one replica is refused by every replica, also by those that
	// had just taken it (and keep the keys they found while they hear the database).
	var made struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	rs[0].client(key).do("POST", "/api/keys", map[string]any{"name": "short-lived"}, http.StatusCreated, &made)
	for _, r := range rs {
		r.client(made.Key).do("GET", "/api/v1/users/me", nil, http.StatusOK, nil)
	}
	r3.do("DELETE", "/api/keys/"+made.ID, nil, http.StatusOK, nil)
	if status, _ := rs[2].client(made.Key).call("GET", "/api/v1/users/me", nil); status != http.StatusUnauthorized {
		t.Fatalf("the replica that revoked the key answered %d with it, want 401", status)
	}
	for i, r := range rs[:2] {
		waitFor(t, 60*time.Second, fmt.Sprint("replica ", i+1, " to refuse the revoked key"), func() (bool, string) {
			status, _ := r.client(made.Key).call("GET", "/api/v1/users/me", nil)
			return status == http.StatusUnauthorized, fmt.Sprint(status)
		})
	}
}

// conversationObservations are the raw JSON bodies of the conversation's observations.
func conversationObservations(c *client, convID string) []string {
	c.t.Helper()
	var p struct {
		Items []json.RawMessage `json:"items"`
	}
	c.do("GET", "/api/v1/events/search?kind__eq=ObservationEvent&limit=100&conversation_id__eq="+url.QueryEscape(convID), nil, http.StatusOK, &p)
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = string(it)
	}
	return out
}

// TestKeyRotationWithReplicas: the key is rotated while two replicas run, each step refused
// until every replica is ready for it: a new key is added, made active once both hold it,
// every stored secret resealed under it once both seal with it, and the old key pruned once
// nothing is sealed under it. Both replicas go on opening the secrets, the sandbox's session
// key included, and a replica started afterwards with the pruned file opens them too.
func TestKeyRotationWithReplicas(t *testing.T) {
	t.Parallel()
	const key = "rotation-admin-key-0123456789"
	db := pgtest.Database(t)
	keyring := filepath.Join(t.TempDir(), "keyring.json")
	if _, stderr, code := runAgentd(t, nil, "keyring", "create", keyring); code != 0 {
		t.Fatalf("keyring create: %s", stderr)
	}
	env := []string{"AGENTD_ADMIN_KEY=" + key, "AGENTD_DATABASE=" + db, "AGENTD_KEYRING_FILE=" + keyring,
		"AGENTD_CONVERSATION_LEASE=" + replicaLease, "AGENTD_KEYRING_RELOAD=200ms"}
	r1 := startServer(t, newDataDir(t), env)
	r2 := startServer(t, newDataDir(t), env)
	a1, a2 := r1.client(key), r2.client(key)
	a1.do("POST", "/api/settings", map[string]any{"llm_model": "m", "llm_api_key": "sk-before-rotation"}, http.StatusOK, nil)
	sb := a2.startSandbox()
	a2.waitSandbox(sb.ID, "RUNNING")

	step := func(args ...string) (string, string, int) {
		return runAgentd(t, env, append([]string{"keyring"}, args...)...)
	}
	out, stderr, code := step("add-key")
	if code != 0 {
		t.Fatalf("add-key: %s", stderr)
	}
	m := regexp.MustCompile(`key (\S+) added`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("add-key printed no key id: %s", out)
	}
	newKey := m[1]
	// Each step is refused until the replicas have read the file (and told so in their
	// heartbeat); then it passes.
	for _, args := range [][]string{{"activate", newKey}, {"reseal"}, {"prune"}} {
		waitFor(t, 60*time.Second, "keyring "+args[0]+" to pass", func() (bool, string) {
			out, stderr, code := step(args...)
			if code != 0 && !strings.Contains(stderr, "do not") {
				t.Fatalf("keyring %s failed for another reason than the replicas: %s", args[0], stderr)
			}
			return code == 0, out + stderr
		})
	}
	data, err := os.ReadFile(keyring)
	if err != nil {
		t.Fatal(err)
	}
	var f keyringFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Keys) != 1 || f.Keys[0].ID != newKey || !f.Keys[0].Active {
		t.Fatalf("keyring after the rotation: %s (%v)", data, err)
	}
	for _, c := range []*client{a1, a2} {
		var view struct {
			LLMAPIKeySet bool `json:"llm_api_key_set"`
		}
		c.do("GET", "/api/settings", nil, http.StatusOK, &view)
		if !view.LLMAPIKeySet {
			t.Error("the LLM key is not readable after the rotation")
		}
		if got := c.sandbox(sb.ID); got.SessionAPIKey == nil || *got.SessionAPIKey != *sb.SessionAPIKey {
			t.Errorf("the sandbox's session key after the rotation: %v", deref(got.SessionAPIKey))
		}
	}
	r3 := startServer(t, newDataDir(t), env)
	if got := r3.client(key).sandbox(sb.ID); got.SessionAPIKey == nil || *got.SessionAPIKey != *sb.SessionAPIKey {
		t.Errorf("a replica started after the rotation reads the session key as %v", deref(got.SessionAPIKey))
	}
	for _, s := range []*server{r1, r2, r3} {
		if strings.Contains(s.stderr.String(), "level=ERROR") {
			t.Errorf("errors in a replica's log:\n%s", s.stderr)
		}
	}
}
