package main_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestWebClientFlow follows OpenHands' web app through a whole conversation against agentd
// serve, with the process sandbox backend and a scripted model, building every URL as the web
// app builds it: the app server's routes at the server's address, and the agent server's at
// the scheme, host and port of the conversation's conversation_url (its path is dropped).
//
// The web app sends no key to the app server in OpenHands' oss mode; here the user's key goes
// as X-Session-API-Key, as a proxy or the session cookie of agentd's web app supplies it. The
// agent server's routes get the conversation's session_api_key, as the web app sends it.
func TestWebClientFlow(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	model := newWebAppModel(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + agentAdminKey, "AGENTD_CONVERSATION_TITLES=model",
		// The scripted model listens on loopback, as a local model server would.
		"AGENTD_ALLOW_INTERNAL=127.0.0.0/8"})
	key := s.client(agentAdminKey).newUser("wendy")
	app := &webApp{t: t, base: s.url, key: key, hc: &http.Client{Timeout: time.Minute}}

	// The first calls: the app's configuration, without a key.
	var cfg struct {
		AppMode string `json:"APP_MODE"`
	}
	app.call("GET", app.base+"/api/options/config", nil, nil, http.StatusOK, &cfg)
	if cfg.AppMode != "oss" {
		t.Errorf("APP_MODE %q, want oss", cfg.AppMode)
	}
	app.call("GET", app.base+"/api/v1/web-client/config", nil, nil, http.StatusOK, nil)
	var options []string
	app.api("GET", "/api/options/models", nil, http.StatusOK, &options)
	app.api("GET", "/api/options/agents", nil, http.StatusOK, &options)
	if !slices.Contains(options, "CodeActAgent") {
		t.Errorf("agents %v", options)
	}

	// Settings: none yet (the app then opens its settings dialog), then the flat V0 body.
	app.api("GET", "/api/settings", nil, http.StatusNotFound, nil)
	app.api("POST", "/api/settings", map[string]any{
		"llm_model": "openai/gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey,
		"agent": "CodeActAgent", "language": "en", "confirmation_mode": false, "security_analyzer": "",
	}, http.StatusOK, nil)
	var settings map[string]any
	app.api("GET", "/api/settings", nil, http.StatusOK, &settings)
	if settings["llm_api_key_set"] != true || settings["llm_api_key"] != nil {
		t.Errorf("settings after saving: key set %v, key %v", settings["llm_api_key_set"], settings["llm_api_key"])
	}
	var home struct {
		Results []json.RawMessage `json:"results"`
	}
	app.api("GET", "/api/conversations?limit=20", nil, http.StatusOK, &home)

	// Start a conversation as the app does, poll its start task, then read the conversation.
	var task struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	app.api("POST", "/api/v1/app-conversations", map[string]any{
		"parent_conversation_id": nil, "agent_type": "default", "plugins": nil, "sandbox_id": nil, "llm_model": nil,
		"initial_message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Create hello.txt saying hi"}}},
	}, http.StatusOK, &task)
	var convID string
	waitFor(t, 30*time.Second, "the start task to be READY", func() (bool, string) {
		var tasks []*struct {
			Status            string  `json:"status"`
			Detail            *string `json:"detail"`
			AppConversationID *string `json:"app_conversation_id"`
		}
		app.api("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, nil, http.StatusOK, &tasks)
		if len(tasks) != 1 || tasks[0] == nil {
			t.Fatalf("start task %s: %v", task.ID, tasks)
		}
		if tasks[0].Status == "ERROR" {
			t.Fatalf("start failed: %s", deref(tasks[0].Detail))
		}
		if tasks[0].Status == "READY" {
			convID = *tasks[0].AppConversationID
		}
		return convID != "", tasks[0].Status
	})
	conv := app.conversation(convID)
	if conv.ConversationURL == nil || conv.SessionAPIKey == nil {
		t.Fatalf("READY conversation without conversation_url or session_api_key: %+v", conv)
	}
	agentHost := hostOf(t, *conv.ConversationURL)
	if agentHost == s.url {
		t.Fatalf("conversation_url %s is on the app server, not the agent-server base", *conv.ConversationURL)
	}
	app.session = *conv.SessionAPIKey
	sandboxID := conv.SandboxID

	// The socket as the web app opens it: the whole history, then live events.
	sock := app.dial(wsURL(agentHost, convID, "resend_all=true&session_api_key="+url.QueryEscape(app.session)))
	first := sock.until(isFinished)
	wantKinds(t, "the first answer", first, "MessageEvent:user", "SystemPromptEvent", "ActionEvent:terminal", "ObservationEvent:terminal", "MessageEvent:agent")
	var runtimeCfg struct {
		RuntimeID string `json:"runtime_id"`
	}
	app.api("GET", "/api/conversations/"+convID+"/config", nil, http.StatusOK, &runtimeCfg)
	if runtimeCfg.RuntimeID == "" {
		t.Error("the conversation config names no runtime")
	}

	// A message sent on the socket, as the web app sends it, is answered live.
	sock.send(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "What does hello.txt say?"}}})
	live := sock.until(isFinished)
	wantKinds(t, "the answer to the socket's message", live, "MessageEvent:user", "ActionEvent:terminal", "ObservationEvent:terminal", "MessageEvent:agent")
	if obs := find(live, "ObservationEvent:terminal"); !strings.Contains(string(obs.Observation), "hi") {
		t.Errorf("cat hello.txt observed %s", obs.Observation)
	}
	if n := app.eventCount(convID); n != sock.seen {
		t.Errorf("events count says %d, the socket sent %d events", n, sock.seen)
	}

	// Pause the agent in the middle of a model call, then run it again: the web app's stop
	// and resume buttons, at the agent server's root.
	sock.send(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Take your time."}}})
	resumed := sock.until(isStatus("running"))
	model.waitBlocked(t)
	app.agent("POST", agentHost+"/api/conversations/"+convID+"/pause", http.StatusOK)
	resumed = append(resumed, sock.until(isStatus("paused"))...)
	app.agent("POST", agentHost+"/api/conversations/"+convID+"/run", http.StatusOK)
	resumed = append(resumed, sock.until(isFinished)...)
	wantKinds(t, "the pause and the run", resumed, "MessageEvent:user", "PauseEvent", "MessageEvent:agent")
	if said := find(resumed, "MessageEvent:agent"); !strings.Contains(string(said.LLMMessage), "Back at it.") {
		t.Errorf("after run the agent said %s", said.LLMMessage)
	}

	// The model named the conversation after its first message.
	waitFor(t, 20*time.Second, "the generated title", func() (bool, string) {
		title := app.listedTitle(convID)
		return title == "Greeting file", title
	})

	// Stop and resume the sandbox from the conversation list, twice each: the app expects
	// success when it is so already. It finds the sandbox's conversations by sandbox_id__eq.
	var inSandbox struct {
		Items []webConv `json:"items"`
	}
	app.api("GET", "/api/v1/app-conversations/search?sandbox_id__eq="+sandboxID+"&limit=100", nil, http.StatusOK, &inSandbox)
	if len(inSandbox.Items) != 1 || inSandbox.Items[0].ID != convID {
		t.Errorf("the sandbox's conversations: %+v", inSandbox.Items)
	}
	for range 2 {
		app.api("POST", "/api/v1/sandboxes/"+sandboxID+"/pause", nil, http.StatusOK, nil)
	}
	if c := app.conversation(convID); c.SandboxStatus != "PAUSED" || c.ConversationStatus != "STOPPED" {
		t.Errorf("after the pause: sandbox %s, conversation %s", c.SandboxStatus, c.ConversationStatus)
	}
	for range 2 {
		app.api("POST", "/api/v1/sandboxes/"+sandboxID+"/resume", nil, http.StatusOK, nil)
	}
	waitFor(t, 20*time.Second, "the sandbox to run again", func() (bool, string) {
		c := app.conversation(convID)
		return c.SandboxStatus == "RUNNING", c.SandboxStatus
	})

	// After the resume the app opens the socket again, with resend_mode=all: the same history
	// as before, and the sandbox works.
	sock.close()
	sock = app.dial(wsURL(agentHost, convID, "resend_mode=all&session_api_key="+url.QueryEscape(app.session)))
	replayed := sock.take(app.eventCount(convID))
	if got, want := labels(replayed), labels(slices.Concat(first, live, resumed)); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("replay after the resume:\n  %s\nwant it to begin with:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	sock.send(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Still there?"}}})
	after := sock.until(isFinished)
	wantKinds(t, "the answer after the resume", after, "MessageEvent:user", "ActionEvent:terminal", "ObservationEvent:terminal", "MessageEvent:agent")
	if obs := find(after, "ObservationEvent:terminal"); !strings.Contains(string(obs.Observation), "hi") {
		t.Errorf("after the resume, cat hello.txt observed %s", obs.Observation)
	}

	// The conversation's skills and hooks, as its panel shows them, and its export.
	var skills struct {
		Skills []json.RawMessage `json:"skills"`
	}
	app.api("GET", "/api/v1/app-conversations/"+convID+"/skills", nil, http.StatusOK, &skills)
	var hooks struct {
		Hooks []json.RawMessage `json:"hooks"`
	}
	app.api("GET", "/api/v1/app-conversations/"+convID+"/hooks", nil, http.StatusOK, &hooks)
	if skills.Skills == nil || hooks.Hooks == nil || len(hooks.Hooks) != 0 {
		t.Errorf("skills %v, hooks %v: want lists, hooks empty", skills.Skills, hooks.Hooks)
	}
	status, archive := app.raw("GET", app.base+"/api/v1/app-conversations/"+convID+"/download", http.Header{"X-Session-API-Key": {app.key}}, nil)
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if status != http.StatusOK || err != nil {
		t.Fatalf("download: %d, %v", status, err)
	}
	if n := app.eventCount(convID); len(zr.File) != n+1 || zr.File[0].Name != "meta.json" {
		t.Errorf("the zip holds %d files (first %s) for %d events", len(zr.File), zr.File[0].Name, n)
	}
	if bytes.Contains(archive, []byte(app.session)) {
		t.Error("the zip holds the session key")
	}

	// Rename as the app does; the user's title stays.
	var renamed bool
	app.api("PATCH", "/api/conversations/"+convID, map[string]any{"title": "Hello file"}, http.StatusOK, &renamed)
	if !renamed || app.listedTitle(convID) != "Hello file" {
		t.Errorf("rename answered %v; the list shows %q", renamed, app.listedTitle(convID))
	}

	// Delete as the app does: the conversation, its sandbox and its socket go.
	var deleted bool
	app.api("DELETE", "/api/conversations/"+convID, nil, http.StatusOK, &deleted)
	if !deleted {
		t.Error("delete answered false")
	}
	if code := sock.closeCode(); code == -1 {
		t.Error("the socket stayed open after the delete")
	}
	var convs []*json.RawMessage
	app.api("GET", "/api/v1/app-conversations?ids="+convID, nil, http.StatusOK, &convs)
	var sbs []*json.RawMessage
	app.api("GET", "/api/v1/sandboxes?id="+sandboxID, nil, http.StatusOK, &sbs)
	if len(convs) != 1 || convs[0] != nil || len(sbs) != 1 || sbs[0] != nil {
		t.Errorf("after the delete: conversations %v, sandboxes %v", convs, sbs)
	}
	if status, _ := app.raw("GET", agentHost+"/api/conversations/"+convID, http.Header{"X-Session-API-Key": {app.session}}, nil); status != http.StatusUnauthorized && status != http.StatusNotFound {
		t.Errorf("the deleted conversation's agent server answered %d", status)
	}
	if code, _ := s.stop(); code != 0 {
		t.Errorf("server exited %d", code)
	}
}

// webAppModel is the scripted model of the web client flow: the agent's requests follow the
// script in order; the title request, which may come at any time beside the agent's first
// call, is answered beside it.
type webAppModel struct {
	*llmtest.Server
	blocked chan struct{}
}

func newWebAppModel(t *testing.T) *webAppModel {
	m := &webAppModel{blocked: make(chan struct{})}
	var workspace string // set by the first step, read by the later ones
	inWorkspace := func(command string) llmtest.Step {
		return llmtest.Step{Func: func(llmtest.RecordedRequest) llmtest.Step {
			args, _ := json.Marshal(map[string]string{"command": "cd " + workspace + " && " + command})
			return llmtest.Calls(llm.ToolCall{Name: "terminal", Arguments: string(args)})
		}}
	}
	m.Server = llmtest.NewOpenAI(t,
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if m := workspaceRE.FindStringSubmatch(req.System); m != nil {
				workspace = m[1]
			}
			return inWorkspace("echo hi > hello.txt")
		}},
		llmtest.Text("Created hello.txt."),
		inWorkspace("cat hello.txt"),
		llmtest.Text("It says hi."),
		// The pause comes while the model thinks.
		llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
			close(m.blocked)
			<-r.Context().Done()
		}},
		llmtest.Text("Back at it."),
		inWorkspace("cat hello.txt"),
		llmtest.Text("Yes, it still says hi."),
	)
	m.Beside(llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		if !strings.Contains(req.Last().Text(), "Create hello.txt saying hi") {
			t.Errorf("the title request does not quote the first message: %+v", req.Messages)
		}
		return llmtest.Step{Reply: &llmtest.Reply{Text: `"Greeting file"`, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 4}}}
	}})
	return m
}

// waitBlocked waits until the model holds a call open, for the test to pause it.
func (m *webAppModel) waitBlocked(t *testing.T) {
	t.Helper()
	select {
	case <-m.blocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not call the model within 30s")
	}
}

// webApp calls agentd as OpenHands' web app does.
type webApp struct {
	t       *testing.T
	base    string // the app server
	key     string // the user's key
	session string // the open conversation's session_api_key
	hc      *http.Client
}

func (a *webApp) raw(method, u string, header http.Header, body any) (int, []byte) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(a.t.Context(), method, u, r)
	if err != nil {
		a.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, u, err)
	}
	return resp.StatusCode, data
}

func (a *webApp) call(method, u string, header http.Header, body any, want int, out any) {
	a.t.Helper()
	status, data := a.raw(method, u, header, body)
	if status != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, u, status, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, u, data, err)
		}
	}
}

// api calls the app server.
func (a *webApp) api(method, p string, body any, want int, out any) {
	a.t.Helper()
	a.call(method, a.base+p, http.Header{"X-Session-API-Key": {a.key}}, body, want, out)
}

// agent calls the agent server with the conversation's session key, as the app's
// buildSessionHeaders does.
func (a *webApp) agent(method, u string, want int) {
	a.t.Helper()
	a.call(method, u, http.Header{"X-Session-API-Key": {a.session}}, map[string]any{}, want, nil)
}

// webConv is what the app reads of a conversation.
type webConv struct {
	ID                 string  `json:"id"`
	SandboxID          string  `json:"sandbox_id"`
	Title              *string `json:"title"`
	SandboxStatus      string  `json:"sandbox_status"`
	ConversationStatus string  `json:"conversation_status"`
	ConversationURL    *string `json:"conversation_url"`
	SessionAPIKey      *string `json:"session_api_key"`
}

func (a *webApp) conversation(id string) webConv {
	a.t.Helper()
	var got []*webConv
	a.api("GET", "/api/v1/app-conversations?ids="+id, nil, http.StatusOK, &got)
	if len(got) != 1 || got[0] == nil {
		a.t.Fatalf("conversation %s: %v", id, got)
	}
	return *got[0]
}

// listedTitle is the conversation's title in the app's home page list.
func (a *webApp) listedTitle(id string) string {
	a.t.Helper()
	var page struct {
		Results []struct {
			ConversationID string `json:"conversation_id"`
			Title          string `json:"title"`
		} `json:"results"`
	}
	a.api("GET", "/api/conversations?limit=20", nil, http.StatusOK, &page)
	for _, r := range page.Results {
		if r.ConversationID == id {
			return r.Title
		}
	}
	a.t.Fatalf("conversation %s is not in the list", id)
	return ""
}

// eventCount is the history count the app reads once its socket is open.
func (a *webApp) eventCount(id string) int {
	a.t.Helper()
	var n int
	a.api("GET", "/api/v1/events/count?conversation_id__eq="+id, nil, http.StatusOK, &n)
	return n
}

// hostOf keeps the scheme, host and port of a URL, as the web app does with a
// conversation_url.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Port() == "" {
		t.Fatalf("conversation_url %q: no host with a port (%v)", raw, err)
	}
	return u.Scheme + "://" + u.Host
}

// wsURL is the event socket's URL at the agent server's root.
func wsURL(host, convID, query string) string {
	return "ws" + strings.TrimPrefix(host, "http") + path.Join("/sockets/events", convID) + "?" + query
}

// webEvent is what these tests read of a socket's event.
type webEvent struct {
	logEvent
	Observation json.RawMessage `json:"observation"`
	LLMMessage  json.RawMessage `json:"llm_message"`
}

func isStatus(status string) func(webEvent) bool {
	return func(ev webEvent) bool { return ev.Key == "execution_status" && ev.Value == status }
}

var isFinished = isStatus("finished")

// labels are the events' labels, without usage statistics and execution statuses.
func labels(evs []webEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind != "ConversationStateUpdateEvent" {
			out = append(out, ev.label())
		}
	}
	return out
}

// find returns the first event with the label.
func find(evs []webEvent, label string) webEvent {
	for _, ev := range evs {
		if ev.label() == label {
			return ev
		}
	}
	return webEvent{}
}

func wantKinds(t *testing.T, what string, evs []webEvent, want ...string) {
	t.Helper()
	if got := labels(evs); !slices.Equal(got, want) {
		t.Fatalf("%s:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// webSocket is an open event socket.
type webSocket struct {
	t *testing.T
	c *websocket.Conn
	// seen counts the log's events received (full states are not in the log).
	seen int
}

func (a *webApp) dial(u string) *webSocket {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), 15*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		a.t.Fatalf("open %s: %v", u, err)
	}
	c.SetReadLimit(8 << 20)
	a.t.Cleanup(func() { c.CloseNow() })
	return &webSocket{t: a.t, c: c}
}

// next returns the next event of the log, skipping full states.
func (s *webSocket) next() webEvent {
	s.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
		_, data, err := s.c.Read(ctx)
		cancel()
		if err != nil {
			s.t.Fatalf("read the socket: %v", err)
		}
		var ev webEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			s.t.Fatalf("frame %s: %v", data, err)
		}
		if ev.Key == "full_state" {
			continue
		}
		s.seen++
		return ev
	}
}

// until reads events up to and including the first for which stop holds.
func (s *webSocket) until(stop func(webEvent) bool) []webEvent {
	s.t.Helper()
	var evs []webEvent
	for {
		ev := s.next()
		evs = append(evs, ev)
		if stop(ev) {
			return evs
		}
	}
}

// take reads n events.
func (s *webSocket) take(n int) []webEvent {
	s.t.Helper()
	evs := make([]webEvent, n)
	for i := range evs {
		evs[i] = s.next()
	}
	return evs
}

func (s *webSocket) send(v any) {
	s.t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(s.t.Context(), 15*time.Second)
	defer cancel()
	if err := s.c.Write(ctx, websocket.MessageText, b); err != nil {
		s.t.Fatalf("send on the socket: %v", err)
	}
}

func (s *webSocket) close() { s.c.Close(websocket.StatusNormalClosure, "") }

// closeCode reads until the server closes the socket, and returns its code (-1 if it did
// not within 30 seconds).
func (s *webSocket) closeCode() websocket.StatusCode {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	for {
		if _, _, err := s.c.Read(ctx); err != nil {
			if ctx.Err() != nil {
				return -1
			}
			return websocket.CloseStatus(err)
		}
	}
}

// TestWebClientChangesPanel: on a backend whose sandboxes have a workspace of their own
// (bwrap), a V1 conversation works in /workspace/project, a git repository from the start, so
// that OpenHands' web app, which asks for the changes of /workspace/project at the agent
// server's root, lists the file the agent wrote and shows its diff. Then the web app's stop
// button while the agent's command runs: the log has the command's observation and the pause,
// no error, and after the run button the agent's next command runs.
func TestWebClientChangesPanel(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bwrap"); err != nil {
		sandboxtest.Unavailable(t, "bubblewrap is not installed: %v", err)
	}
	dir := newDataDir(t)
	model := llmtest.NewOpenAI(t,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"pwd && echo hi > hello.txt"}`)),
		llmtest.Text("hello.txt says hi."),
		llmtest.Calls(llmtest.Call("terminal", `{"command":"touch started && sleep 600"}`)),
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo after > after.txt && cat after.txt"}`)),
		llmtest.Text("Done after the pause."))
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + agentAdminKey, "AGENTD_ALLOW_INTERNAL=127.0.0.0/8"},
		"--sandbox-backend", "bwrap")
	key := s.client(agentAdminKey).newUser("cora")
	app := &webApp{t: t, base: s.url, key: key, hc: &http.Client{Timeout: time.Minute}}
	app.api("POST", "/api/settings", map[string]any{"llm_model": "openai/gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey}, http.StatusOK, nil)

	var task struct {
		ID string `json:"id"`
	}
	app.api("POST", "/api/v1/app-conversations", map[string]any{
		"initial_message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Write hello.txt"}}},
	}, http.StatusOK, &task)
	var convID string
	waitFor(t, time.Minute, "the start task to be READY", func() (bool, string) {
		var tasks []*struct {
			Status            string  `json:"status"`
			Detail            *string `json:"detail"`
			AppConversationID *string `json:"app_conversation_id"`
		}
		app.api("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, nil, http.StatusOK, &tasks)
		if len(tasks) != 1 || tasks[0] == nil || tasks[0].Status == "ERROR" {
			t.Fatalf("start task %s: %+v", task.ID, tasks)
		}
		if tasks[0].Status == "READY" {
			convID = *tasks[0].AppConversationID
		}
		return convID != "", tasks[0].Status
	})
	conv := app.conversation(convID)
	t.Cleanup(func() { // the sandbox goes, with its cgroup, then the server
		req, _ := http.NewRequest("DELETE", s.url+"/api/v1/sandboxes/"+conv.SandboxID, nil)
		req.Header.Set("X-Session-API-Key", key)
		resp, err := app.hc.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("delete the sandbox: %v %v", err, resp)
		}
		if resp != nil {
			resp.Body.Close()
		}
		s.stop() // a server that stops removes its sandboxes' cgroup parent
	})
	agentHost := hostOf(t, *conv.ConversationURL)
	app.session = *conv.SessionAPIKey
	sock := app.dial(wsURL(agentHost, convID, "resend_all=true&session_api_key="+url.QueryEscape(app.session)))
	evs := sock.until(isFinished)
	if obs := find(evs, "ObservationEvent:terminal"); !strings.Contains(string(obs.Observation), `"text":"/workspace/project"`) {
		t.Errorf("the agent's terminal did not start in /workspace/project: %s", obs.Observation)
	}

	var info struct {
		Workspace struct {
			WorkingDir string `json:"working_dir"`
		} `json:"workspace"`
	}
	app.call("GET", agentHost+"/api/conversations/"+convID, http.Header{"X-Session-API-Key": {app.session}}, nil, http.StatusOK, &info)
	if info.Workspace.WorkingDir != "/workspace/project" {
		t.Errorf("the conversation's working_dir is %q", info.Workspace.WorkingDir)
	}
	var changes []struct{ Status, Path string }
	app.call("GET", agentHost+"/api/git/changes/"+url.PathEscape("/workspace/project"), http.Header{"X-Session-API-Key": {app.session}}, nil, http.StatusOK, &changes)
	if len(changes) != 1 || changes[0].Status != "ADDED" || changes[0].Path != "hello.txt" {
		t.Errorf("the Changes panel: %+v, want hello.txt ADDED", changes)
	}
	var diff struct {
		Modified, Original *string
	}
	app.call("GET", agentHost+"/api/git/diff/"+url.PathEscape("/workspace/project/hello.txt"), http.Header{"X-Session-API-Key": {app.session}}, nil, http.StatusOK, &diff)
	if diff.Modified == nil || *diff.Modified != "hi\n" || diff.Original == nil || *diff.Original != "" {
		t.Errorf("the diff of hello.txt: %+v", diff)
	}

	// The stop button while the agent's command runs: a pause, not an error, and the agent's
	// next command after the run button is not refused for the old one.
	sock.send(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Wait a while."}}})
	waitFor(t, time.Minute, "the agent's command to run", func() (bool, string) {
		status, _ := app.raw("GET", agentHost+"/api/file/download?path="+url.QueryEscape("/workspace/project/started"),
			http.Header{"X-Session-API-Key": {app.session}}, nil)
		return status == http.StatusOK, "download answered " + strconv.Itoa(status)
	})
	app.agent("POST", agentHost+"/api/conversations/"+convID+"/pause", http.StatusOK)
	paused := sock.until(isStatus("paused"))
	app.agent("POST", agentHost+"/api/conversations/"+convID+"/run", http.StatusOK)
	paused = append(paused, sock.until(isFinished)...)
	for _, ev := range paused {
		if ev.Kind == "AgentErrorEvent" || ev.Kind == "ConversationErrorEvent" {
			t.Errorf("the pause recorded %s: %+v", ev.Kind, ev)
		}
	}
	wantKinds(t, "the pause mid-command and the run", paused, "MessageEvent:user", "ActionEvent:terminal",
		"ObservationEvent:terminal", "PauseEvent", "ActionEvent:terminal", "ObservationEvent:terminal", "MessageEvent:agent")
	if obs := find(paused, "ObservationEvent:terminal"); !strings.Contains(string(obs.Observation), "aused") {
		t.Errorf("the interrupted command's observation does not say it was paused: %s", obs.Observation)
	}
	var after []webEvent
	for _, ev := range paused {
		if ev.Kind == "ObservationEvent" && strings.Contains(string(ev.Observation), "after") {
			after = append(after, ev)
		}
	}
	if len(after) == 0 {
		t.Errorf("the command after the run did not run: %v", labels(paused))
	}
}
