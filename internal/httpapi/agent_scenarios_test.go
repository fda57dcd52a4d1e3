package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// hasEvent reports whether the log holds an event with this label.
func (c *agentConv) hasEvent(label string) bool {
	return slices.Contains(labels(c.events()), label)
}

// TestMessageDuringARun: a message sent while a command runs reaches the model right after
// the command's result; run and pause behave as the conversation API says.
func TestMessageDuringARun(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice,
		// The command ends once the test has sent its message (or after a minute).
		terminal(t, "i=0; while [ ! -e go-build ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo built"),
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			last := req.Last()
			if last.Role != llm.RoleUser || last.Text() != "also say bye" {
				t.Errorf("the model did not get the message last: %+v", last)
			}
			return llmtest.Calls(llmtest.Call("finish", `{"message":"built; bye"}`))
		}},
	)
	c := e.startAgent(alice, map[string]any{"initial_message": message("build it", true)})
	e.eventually("the command to start", func() bool { return c.hasEvent("ActionEvent:terminal") })
	var conflict struct {
		Detail string `json:"detail"`
	}
	c.api("POST", "/run", nil, http.StatusConflict, &conflict)
	if !strings.Contains(conflict.Detail, "already running") {
		t.Errorf("run while running: %q", conflict.Detail)
	}
	c.api("POST", "/events", message("also say bye", true), http.StatusOK, nil)
	if err := os.WriteFile(filepath.Join(e.projectDir(c.sandboxID), "go-build"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitStatus("finished")
	wantLabels(t, c.events(),
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "MessageEvent:user", "ObservationEvent:terminal",
		"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}

	// A message without run waits; run answers it. The message with run sent during the run
	// asked for another run after it, which finds nothing to answer and ends: the message
	// without run is sent once it has, or that run would answer it.
	e.eventually("the agent's loop to end", func() bool { return !e.app.Conversations.AgentRunning(c.id) })
	srv.Push(llmtest.Text("Done waiting."))
	c.api("POST", "/events", message("hold on", false), http.StatusOK, nil)
	if got := c.waitStatus("idle"); got != "idle" || len(srv.Requests()) != 2 {
		t.Fatalf("after a message without run: %s, %d calls", got, len(srv.Requests()))
	}
	c.api("POST", "/run", nil, http.StatusOK, nil)
	c.waitStatus("finished")

	// Pausing a finished agent does nothing and answers success, as OpenHands' agent servers.
	c.api("POST", "/pause", nil, http.StatusOK, nil)
	if got := c.info().ExecutionStatus; got != "finished" {
		t.Errorf("after pausing a finished agent: %s", got)
	}
}

// TestSandboxPausedMidCommand: pausing the sandbox freezes the command; its result arrives
// after the resume, and nothing is lost. The command waits for a file the test writes while
// the sandbox is paused, so it cannot finish before the pause however slow the machine.
func TestSandboxPausedMidCommand(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	const marker = "agentd-test-paused-mid-command"
	e.scripted(alice,
		terminal(t, `sh -c 'until [ -e go ]; do sleep 0.01; done; echo slept' `+marker),
		llmtest.Calls(llmtest.Call("finish", `{"message":"slept"}`)),
	)
	c := e.startAgent(alice, map[string]any{"initial_message": message("sleep", true)})
	e.eventually("the command to run", func() bool { return len(processesMatching(t, marker)) > 0 })
	e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/pause", alice, nil, http.StatusOK, nil)
	wantStopped(t, marker)
	if err := os.WriteFile(filepath.Join(e.projectDir(c.sandboxID), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if c.hasEvent("ObservationEvent:terminal") {
		t.Fatal("the command finished while its sandbox was paused")
	}
	if got := c.info().ExecutionStatus; got != "running" {
		t.Fatalf("execution status while the sandbox is paused: %s", got)
	}
	e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/resume", alice, nil, http.StatusOK, nil)
	c.waitStatus("finished")
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" && ev.ToolName == "terminal" && !strings.Contains(observationText(ev), "slept") {
			t.Fatalf("terminal observation %s", ev.Observation)
		}
	}
	if !c.hasEvent("ObservationEvent:terminal") {
		t.Fatal("no terminal observation")
	}
}

// TestRateLimitedModel: a 429 is retried; when retries run out, an error event says so.
func TestRateLimitedModel(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.RateLimited("0"), llmtest.Text("Hello after waiting."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hi", true)})
	c.waitStatus("finished")
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	srv.Push(llmtest.RateLimited(""), llmtest.RateLimited(""), llmtest.RateLimited(""))
	c.api("POST", "/events", message("again", true), http.StatusOK, nil)
	c.waitStatus("error")
	evs := c.events()
	last := evs[len(evs)-2]
	if last.Kind != "ConversationErrorEvent" || last.Code != "LLMRateLimitError" || !strings.Contains(last.Detail, "gave up after 3 attempts") {
		t.Fatalf("error event %+v", last)
	}
	if strings.Contains(last.Detail, llmtest.APIKey) {
		t.Fatal("the API key is in the event")
	}
}

// TestStuckAgent: the same action with the same result four times stops the agent.
func TestStuckAgent(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	var steps []llmtest.Step
	for range 5 {
		steps = append(steps, terminal(t, "echo same"))
	}
	srv := e.scripted(alice, steps...)
	c := e.startAgent(alice, map[string]any{"initial_message": message("loop", true)})
	c.waitStatus("stuck")
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d model calls, want 4", n)
	}
	evs := c.events()
	if got := labels(evs); got[len(got)-2] != "ConversationErrorEvent:AgentStuckInLoop" {
		t.Fatalf("log ends %v", got[len(got)-3:])
	}
	if conv := e.getConversation(alice, c.id); conv.ExecutionStatus == nil || *conv.ExecutionStatus != "stuck" {
		t.Fatalf("listing status %v", strOrNil(conv.ExecutionStatus))
	}
	var v0 struct {
		RuntimeStatus *string `json:"runtime_status"`
		URL           *string `json:"url"`
	}
	e.must("GET", "/api/conversations/"+c.id, alice, nil, http.StatusOK, &v0)
	if v0.RuntimeStatus == nil || *v0.RuntimeStatus != "STATUS$ERROR" || v0.URL == nil || *v0.URL != c.url {
		t.Fatalf("V0 view of a stuck agent: %+v", v0)
	}
}

// TestMaxIterations: the user's max_iterations bounds a run.
func TestMaxIterations(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice,
		llmtest.Calls(llmtest.Call("think", `{"thought":"one"}`)),
		llmtest.Calls(llmtest.Call("think", `{"thought":"two"}`)),
		llmtest.Calls(llmtest.Call("think", `{"thought":"three"}`)),
	)
	e.must("POST", "/api/settings", alice, map[string]any{"max_iterations": 3}, http.StatusOK, nil)
	c := e.startAgent(alice, map[string]any{"initial_message": message("think", true)})
	c.waitStatus("error")
	evs := c.events()
	if got := labels(evs); !slices.Equal(got[len(got)-2:], []string{"ConversationErrorEvent:MaxIterationsReached", "execution_status=error"}) {
		t.Fatalf("log ends %v", got)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	if c.info().ExecutionStatus != "error" {
		t.Fatal("status")
	}
}

// TestCondensation: a history longer than the condenser's limit is summarized by the model,
// and later prompts carry the summary instead of the forgotten events.
func TestCondensation(t *testing.T) {
	e := newEnv(t)
	e.agent.CondenserMaxEvents = 6
	e.agent.CondenserKeepFirst = 1
	e.restart()
	_, alice := e.newUser("alice")
	steps := []llmtest.Step{terminal(t, "echo one"), terminal(t, "echo two"), terminal(t, "echo three")}
	steps = append(steps, llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		if len(req.Tools) != 0 || !strings.Contains(req.Messages[0].Text(), "[ACTION terminal]") {
			t.Errorf("expected the summary request: %+v", req.Messages)
		}
		return llmtest.Text("DONE: echoed one and two.")
	}}, llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		var texts []string
		for _, m := range req.Messages {
			texts = append(texts, m.Text())
		}
		all := strings.Join(texts, "\n")
		if !strings.Contains(all, "DONE: echoed one and two.") || strings.Contains(all, "one\n[") {
			t.Errorf("prompt after condensing: %q", texts)
		}
		return llmtest.Calls(llmtest.Call("finish", `{"message":"echoed"}`))
	}})
	e.scripted(alice, steps...)
	c := e.startAgent(alice, map[string]any{"initial_message": message("echo", true)})
	c.waitStatus("finished")
	var cond *wireEvent
	evs := c.events()
	for i := range evs {
		if evs[i].Kind == "Condensation" {
			cond = &evs[i]
		}
	}
	if cond == nil {
		t.Fatalf("no condensation in %v", labels(evs))
	}
	var body struct {
		Forgotten []string `json:"forgotten_event_ids"`
		Summary   string   `json:"summary"`
		Offset    int      `json:"summary_offset"`
	}
	raw := e.must("GET", c.path("/events/"+cond.ID), c.sessionKey, nil, http.StatusOK, nil)
	json.Unmarshal(raw, &body)
	if len(body.Forgotten) == 0 || body.Summary != "DONE: echoed one and two." || body.Offset != 1 {
		t.Fatalf("condensation %s", raw)
	}
}

// TestReplay: a V0 replay executes its recorded actions in the sandbox without any model call,
// then waits for the user.
func TestReplay(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice) // any call would exhaust the script and fail the test
	trajectory := `[
		{"id": 0, "source": "user", "action": "message", "args": {"content": "Make notes", "image_urls": []}},
		{"id": 1, "source": "agent", "action": "run", "args": {"command": "mkdir -p notes", "thought": "a directory first"}},
		{"id": 2, "source": "agent", "observation": "run", "content": "", "extras": {}},
		{"id": 3, "source": "agent", "action": "edit", "args": {"path": "/workspace/notes/a.txt", "command": "create", "file_text": "alpha\n"}},
		{"id": 4, "source": "agent", "observation": "edit", "content": "ok", "extras": {}},
		{"id": 5, "source": "agent", "action": "run", "args": {"command": "cat notes/a.txt"}},
		{"id": 6, "source": "agent", "action": "finish", "args": {"final_thought": "Notes made."}}
	]`
	var created struct {
		ConversationID string `json:"conversation_id"`
	}
	e.must("POST", "/api/conversations", alice, map[string]any{"replay_json": trajectory}, http.StatusOK, &created)
	var info struct {
		URL           *string `json:"url"`
		SessionAPIKey *string `json:"session_api_key"`
		Status        string  `json:"status"`
	}
	e.eventually("the conversation to run", func() bool {
		e.must("GET", "/api/conversations/"+created.ConversationID, alice, nil, http.StatusOK, &info)
		return info.Status == "RUNNING" && info.URL != nil
	})
	c := &agentConv{e: e, key: alice, id: created.ConversationID, url: *info.URL, sessionKey: *info.SessionAPIKey}
	c.sandboxID = strings.Split(strings.TrimPrefix(c.path(""), "/agent-server/"), "/")[0]
	c.waitStatus("finished")
	wantLabels(t, c.events(),
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:file_editor", "ObservationEvent:file_editor",
		"ActionEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
	ws := filepath.Join(e.sandboxDir(c.sandboxID), "workspace") // a V0 conversation works there
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "a.txt")); err != nil || string(b) != "alpha\n" {
		t.Fatalf("notes/a.txt: %q, %v", b, err)
	}
	var catOut string
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" && ev.ToolName == "terminal" {
			catOut = observationText(ev)
		}
	}
	if !strings.Contains(catOut, "alpha") {
		t.Fatalf("cat output %q", catOut)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the replay called the model %d times", n)
	}
	// The user takes over with the model.
	srv.Push(llmtest.Text("The notes are in notes/a.txt."))
	c.api("POST", "/events", message("where are the notes?", true), http.StatusOK, nil)
	c.waitStatus("finished")
	if reqs := srv.Requests(); len(reqs) != 1 || len(toolResults(reqs[0])) != 4 {
		t.Fatalf("the model did not see the replayed steps: %+v", reqs)
	}
}

// TestV0InstructionsAndImages: a V0 conversation's instructions are in the system prompt and
// its images in the first message the model gets.
func TestV0InstructionsAndImages(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("Noted."))
	var created struct {
		ConversationID string `json:"conversation_id"`
	}
	e.must("POST", "/api/conversations", alice, map[string]any{
		"initial_user_msg": "What is in the picture?", "image_urls": []string{image},
		"conversation_instructions": "Always answer in French.",
	}, http.StatusOK, &created)
	e.eventually("the model call", func() bool { return len(srv.Requests()) == 1 })
	req := srv.Requests()[0]
	if !strings.Contains(req.System, "<CONVERSATION_INSTRUCTIONS>") || !strings.Contains(req.System, "Always answer in French.") {
		t.Errorf("system prompt lacks the instructions: %.200s", req.System[max(0, len(req.System)-300):])
	}
	if m := req.Messages[0]; len(m.Parts) != 2 || m.Parts[0].Text != "What is in the picture?" || m.Parts[1].ImageURL != image {
		t.Errorf("first message %+v", m)
	}
}

// TestEventsArePublishedOnceStored: live readers hear of every event, in the log's order, and
// each is in the store by then.
func TestEventsArePublishedOnceStored(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "echo hi"), llmtest.Calls(llmtest.Call("finish", `{"message":"said hi"}`)))
	c := e.startAgent(alice, map[string]any{})
	// The conversation reads as idle from the moment it is ready; the agent's first run
	// records the system prompt soon after, then the idle status, in a second append.
	// Subscribe once it has recorded both and stopped, so that the message comes after them.
	e.eventually("the first run to record the system prompt and idle", func() bool {
		l := labels(c.events())
		return slices.Contains(l, "SystemPromptEvent") && slices.Contains(l, "execution_status=idle") && !e.app.Conversations.AgentRunning(c.id)
	})
	c.waitStatus("idle")
	sub, err := e.app.Conversations.Subscribe(t.Context(), c.id, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c.api("POST", "/events", message("say hi", true), http.StatusOK, nil)
	var heard []string
	deadline := time.After(20 * time.Second)
	for len(heard) == 0 || heard[len(heard)-1] != "execution_status=finished" {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("subscription closed")
			}
			var w wireEvent
			json.Unmarshal(ev.Body, &w)
			var found []*json.RawMessage
			e.must("GET", "/api/v1/events?id="+w.ID, alice, nil, http.StatusOK, &found)
			if len(found) != 1 || found[0] == nil {
				t.Fatalf("event %s published before it was stored", w.ID)
			}
			// The conversation's own idle update may land after the subscription: what
			// counts is everything from the message on.
			if w.Key != "stats" && (len(heard) > 0 || w.label() == "MessageEvent:user") {
				heard = append(heard, w.label())
			}
		case <-deadline:
			t.Fatalf("heard only %v", heard)
		}
	}
	want := []string{"MessageEvent:user", "execution_status=running", "ActionEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished"}
	if !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}
