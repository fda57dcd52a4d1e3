package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

const image = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// TestAgentFixesAProgram is the whole story through the public API: the agent writes a
// program in the sandbox, runs it, reads the output, fixes the planted bug with str_replace,
// runs it again and finishes; the log holds every step in order, and the model was sent the
// prompt, the tools, the image and every result.
func TestAgentFixesAProgram(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	program := func(ws string) string { return filepath.Join(ws, "greet.sh") }
	srv := e.scripted(alice,
		callIn(t, "file_editor", func(ws string) map[string]any {
			return map[string]any{"command": "create", "path": program(ws),
				"file_text": "greet() { echo \"Hello, $1!\"; }\ngreet wrold\n", "summary": "write the program"}
		}),
		terminal(t, "bash greet.sh"),
		callIn(t, "file_editor", func(ws string) map[string]any {
			return map[string]any{"command": "str_replace", "path": program(ws), "old_str": "greet wrold", "new_str": "greet world"}
		}),
		terminal(t, "bash greet.sh"),
		llmtest.Step{Reply: &llmtest.Reply{Text: "Fixed.", ToolCalls: []llm.ToolCall{
			llmtest.Call("finish", `{"message":"greet.sh now greets the world."}`)}, Usage: llm.Usage{PromptTokens: 2000, CompletionTokens: 20}}},
	)
	c := e.startAgent(alice, map[string]any{
		"initial_message": message("Write greet.sh, run it and fix what is wrong.", true, image),
		"title":           "greet",
	})
	c.waitStatus("finished")

	evs := c.events()
	wantLabels(t, evs,
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:file_editor", "ObservationEvent:file_editor",
		"ActionEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:file_editor", "ObservationEvent:file_editor",
		"ActionEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:finish", "ObservationEvent:finish",
		"execution_status=finished")

	var outputs []string
	for _, ev := range evs {
		if ev.Kind == "ObservationEvent" && ev.ToolName == "terminal" {
			outputs = append(outputs, observationText(ev))
		}
		if ev.Kind == "ObservationEvent" {
			var action *wireEvent
			for i := range evs {
				if evs[i].ID == ev.ActionID {
					action = &evs[i]
				}
			}
			if action == nil || action.ToolCallID != ev.ToolCallID {
				t.Errorf("observation %s does not name its action", ev.ID)
			}
		}
	}
	if len(outputs) != 2 || !strings.Contains(outputs[0], "Hello, wrold!") || !strings.Contains(outputs[1], "Hello, world!") {
		t.Fatalf("terminal outputs %q", outputs)
	}
	ws := e.projectDir(c.sandboxID)
	if b, err := os.ReadFile(filepath.Join(ws, "greet.sh")); err != nil || !strings.Contains(string(b), "greet world") {
		t.Fatalf("greet.sh: %q, %v", b, err)
	}

	// What the model was sent.
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model calls, want 5", len(reqs))
	}
	first := reqs[0]
	if first.APIKey != llmtest.APIKey || first.Model != "gpt-4o" {
		t.Errorf("first call: key %q model %q", first.APIKey, first.Model)
	}
	if workspaceOf(t, first) != ws || !strings.Contains(first.System, "coding agent of agentd") {
		t.Errorf("system prompt: %.300s", first.System)
	}
	var tools []string
	for _, tl := range first.Tools {
		tools = append(tools, tl.Name)
	}
	if !slices.Equal(tools, []string{"terminal", "file_editor", "glob", "grep", "task_tracker", "think", "finish"}) {
		t.Errorf("tools %v", tools)
	}
	if m := first.Messages[0]; m.Role != llm.RoleUser || len(m.Parts) != 2 || m.Parts[1].ImageURL != image {
		t.Errorf("first message %+v: want the text and the image", m)
	}
	results := toolResults(reqs[4])
	if len(results) != 4 || !strings.Contains(results[1], "Hello, wrold!") || !strings.Contains(results[3], "Hello, world!") ||
		!strings.Contains(results[2], "greet world") {
		t.Errorf("tool results sent to the model: %q", results)
	}

	// The listing shows the agent's status and the usage.
	conv := e.getConversation(alice, c.id)
	if conv.ExecutionStatus == nil || *conv.ExecutionStatus != "finished" {
		t.Errorf("execution status in the listing: %v", strOrNil(conv.ExecutionStatus))
	}
	var metrics struct {
		ModelName             string  `json:"model_name"`
		AccumulatedCost       float64 `json:"accumulated_cost"`
		AccumulatedTokenUsage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"accumulated_token_usage"`
	}
	var full map[string]json.RawMessage
	e.must("GET", "/api/v1/app-conversations?ids="+c.id, alice, nil, http.StatusOK, &[]*map[string]json.RawMessage{&full})
	json.Unmarshal(full["metrics"], &metrics)
	if metrics.ModelName != "gpt-4o" || metrics.AccumulatedTokenUsage.PromptTokens != 6000 ||
		metrics.AccumulatedTokenUsage.CompletionTokens != 220 || metrics.AccumulatedCost <= 0 {
		t.Errorf("metrics %s", full["metrics"])
	}
	info := c.info()
	if info.ID != dashed(c.id) || info.ExecutionStatus != "finished" || info.Agent.LLM.Model != "gpt-4o" || len(info.Metrics) == 0 {
		t.Errorf("conversation API info %+v", info)
	}

	// The events are also found through /api/v1/events, by conversation and kind.
	var page struct {
		Items []wireEvent `json:"items"`
	}
	e.must("GET", "/api/v1/events/search?conversation_id__eq="+dashed(c.id)+
		"&kind__eq=openhands.sdk.event.llm_convertible.action.ActionEvent", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 5 {
		t.Errorf("%d actions found by the qualified kind, want 5", len(page.Items))
	}
	var n int
	e.must("GET", "/api/v1/events/count?conversation_id__eq="+c.id, alice, nil, http.StatusOK, &n)
	if n != len(evs) {
		t.Errorf("count %d, want %d", n, len(evs))
	}
	var batch []*wireEvent
	e.must("GET", "/api/v1/events?id="+evs[3].ID+"&id=nope", alice, nil, http.StatusOK, &batch)
	if len(batch) != 2 || batch[0] == nil || batch[0].ID != evs[3].ID || batch[1] != nil {
		t.Errorf("batch get %+v", batch)
	}
	// And at the current generation's paths, with the conversation in the path.
	byConv := "/api/v1/conversation/" + dashed(c.id) + "/events"
	page.Items = nil
	e.must("GET", byConv+"/search?kind__eq=ActionEvent&limit=2", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 2 || page.Items[0].Kind != "ActionEvent" {
		t.Errorf("search by path: %+v", page.Items)
	}
	e.must("GET", byConv+"/count", alice, nil, http.StatusOK, &n)
	if n != len(evs) {
		t.Errorf("count by path %d, want %d", n, len(evs))
	}
	e.must("GET", "/api/v1/conversation/"+c.id+"/events/count?kind__eq=ActionEvent", alice, nil, http.StatusOK, &n)
	if n != 5 {
		t.Errorf("count of actions by path %d, want 5", n)
	}
	batch = nil
	e.must("GET", byConv+"?id="+evs[3].ID+"&id=nope", alice, nil, http.StatusOK, &batch)
	if len(batch) != 2 || batch[0] == nil || batch[0].ID != evs[3].ID || batch[1] != nil {
		t.Errorf("batch get by path %+v", batch)
	}
	other := "/api/v1/conversation/" + strings.Repeat("ab", 16) + "/events"
	e.must("GET", other+"?id="+evs[3].ID, alice, nil, http.StatusOK, &batch)
	if len(batch) != 1 || batch[0] != nil {
		t.Errorf("another conversation's path gets this one's event: %+v", batch)
	}
	e.must("GET", other+"/count", alice, nil, http.StatusOK, &n)
	if n != 0 {
		t.Errorf("count under an unknown conversation %d, want 0", n)
	}
	if status, body := e.call("GET", "/api/v1/conversation/"+c.id+"/events/search?limit=0", alice, nil); status != 422 {
		t.Errorf("limit=0: %d %s, want 422", status, body)
	}
	obs := evs[slices.IndexFunc(evs, func(ev wireEvent) bool { return ev.Kind == "ObservationEvent" })]
	var one wireEvent
	c.api("GET", "/events/"+obs.ID, nil, http.StatusOK, &one)
	if one.ID != obs.ID || one.Kind != "ObservationEvent" || one.ActionID == "" {
		t.Errorf("get one event: %+v", one)
	}
	var desc struct {
		Items []wireEvent `json:"items"`
	}
	c.api("GET", "/events/search?sort_order=TIMESTAMP_DESC&limit=1&kind=MessageEvent&source=user", nil, http.StatusOK, &desc)
	if len(desc.Items) != 1 || desc.Items[0].ID != evs[0].ID {
		t.Errorf("newest user message: %+v", desc.Items)
	}
}

func dashed(id string) string {
	return id[0:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]
}

// TestConversationAPIAccess: the sandbox's session key or the owner's key opens the
// conversation API; nothing opens another user's.
func TestConversationAPIAccess(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.scripted(alice, llmtest.Text("Hello."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hi", true)})
	c.waitStatus("finished")

	// The owner's API key works too, and dashed ids are the same conversation.
	dashedPath := strings.Replace(c.path(""), c.id, dashed(c.id), 1)
	e.must("GET", dashedPath, alice, nil, http.StatusOK, nil)
	// The sandbox's exposed AGENT_SERVER URL is the prefix of the conversation URL.
	var sbs []*struct {
		ExposedURLs []struct{ Name, URL string } `json:"exposed_urls"`
	}
	e.must("GET", "/api/v1/sandboxes?id="+c.sandboxID, alice, nil, http.StatusOK, &sbs)
	if len(sbs) != 1 || sbs[0] == nil || len(sbs[0].ExposedURLs) != 1 || sbs[0].ExposedURLs[0].Name != "AGENT_SERVER" ||
		!strings.HasPrefix(c.url, sbs[0].ExposedURLs[0].URL+"/api/conversations/") {
		t.Fatalf("sandbox %+v, conversation URL %s", sbs, c.url)
	}
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"wrong key", "not-the-key", http.StatusUnauthorized},
		{"another user's API key", bob, http.StatusNotFound},
	} {
		if status, body := e.call("GET", c.path(""), tc.key, nil); status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
		}
	}
	// Bob's own sandbox key does not open alice's conversation through bob's sandbox path.
	e.scripted(bob, llmtest.Text("Hi bob."))
	bc := e.startAgent(bob, map[string]any{"initial_message": message("hi", true)})
	other := "/agent-server/" + bc.sandboxID + "/api/conversations/" + c.id
	if status, _ := e.call("GET", other, bc.sessionKey, nil); status != http.StatusNotFound {
		t.Errorf("alice's conversation under bob's sandbox: %d, want 404", status)
	}
	if status, _ := e.call("GET", c.path(""), bc.sessionKey, nil); status != http.StatusUnauthorized {
		t.Errorf("bob's sandbox key on alice's sandbox: %d, want 401", status)
	}
	// /api/v1/events keeps to the caller's conversations.
	var n int
	e.must("GET", "/api/v1/events/count?conversation_id__eq="+c.id, bob, nil, http.StatusOK, &n)
	if n != 0 {
		t.Errorf("bob counts %d of alice's events", n)
	}
	e.must("GET", "/agent-server/"+c.sandboxID+"/alive", "", nil, http.StatusOK, nil)
}

// TestNoLLMSettings: creating a conversation without a usable LLM is a 400 that says what to
// set; a replay is the exception.
func TestNoLLMSettings(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.LLMModel, c.LLMBaseURL, c.LLMAPIKey = "", "", "" })
	_, alice := e.newUser("alice")
	for _, tc := range []struct {
		name, path string
		body       any
	}{
		{"v1", "/api/v1/app-conversations", map[string]any{"initial_message": message("hi", true)}},
		{"v0", "/api/conversations", map[string]any{"initial_user_msg": "hi"}},
	} {
		status, body := e.call("POST", tc.path, alice, tc.body)
		var d struct {
			Detail string `json:"detail"`
		}
		json.Unmarshal(body, &d)
		if status != http.StatusBadRequest || !strings.Contains(d.Detail, "no model is set") || !strings.Contains(d.Detail, "llm_api_key") {
			t.Errorf("%s: %d %s, want 400 saying what to set", tc.name, status, body)
		}
	}
	// A model without a key, for a public API, is refused the same way.
	e.must("POST", "/api/settings", alice, map[string]any{"llm_model": "gpt-4o"}, http.StatusOK, nil)
	if status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{}); status != http.StatusBadRequest ||
		!strings.Contains(string(body), "no API key is set for model gpt-4o") {
		t.Errorf("model without key: %d %s", status, body)
	}
	// A local server needs no key.
	e.must("POST", "/api/settings", alice, map[string]any{"llm_base_url": "http://127.0.0.1:1/v1"}, http.StatusOK, nil)
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{}, http.StatusOK, nil)
	// A replay needs no LLM at all.
	_, carol := e.newUser("carol")
	e.must("POST", "/api/conversations", carol, map[string]any{
		"replay_json": `[{"source":"user","action":"message","args":{"content":"hi"}}]`}, http.StatusOK, nil)
	// A replay that is not a trajectory is a 422.
	status, body := e.call("POST", "/api/conversations", carol, map[string]any{
		"replay_json": `[{"source":"agent","action":"run","args":{"command":"ls"}}]`})
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "the first event of replay_json must be the user's message") {
		t.Errorf("bad replay: %d %s", status, body)
	}
}
