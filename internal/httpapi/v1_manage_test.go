package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// userTexts are the texts of the conversation's user messages, in log order.
func (e *env) userTexts(key, convID string) []string {
	e.t.Helper()
	var page struct {
		Items []wireEvent `json:"items"`
	}
	e.must("GET", "/api/v1/conversation/"+convID+"/events/search?kind__eq=MessageEvent", key, nil, http.StatusOK, &page)
	var out []string
	for _, ev := range page.Items {
		if ev.Source == "user" && len(ev.LLMMessage.Content) > 0 {
			out = append(out, ev.LLMMessage.Content[0].Text)
		}
	}
	return out
}

// TestV1Patch: PATCH changes what it names, keeps the rest, and answers the conversation;
// bad values are 422s at their field.
func TestV1Patch(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	_, c := e.newConversation(alice, map[string]any{"tags": map[string]any{"team": "infra"}})
	var raw map[string]json.RawMessage
	e.must("GET", "/api/v1/app-conversations?ids="+c.ID, alice, nil, http.StatusOK, &[]*map[string]json.RawMessage{&raw})
	if string(raw["agent_kind"]) != `"openhands"` || string(raw["public"]) != "null" || string(raw["tags"]) != `{"team":"infra"}` {
		t.Fatalf("new conversation: agent_kind %s public %s tags %s", raw["agent_kind"], raw["public"], raw["tags"])
	}

	var got map[string]any
	path := "/api/v1/app-conversations/" + dashed(c.ID)
	e.must("PATCH", path, alice, map[string]any{"title": "  Renamed  ", "public": true}, http.StatusOK, &got)
	if got["title"] != "Renamed" || got["public"] != true || got["id"] != c.ID || got["selected_branch"] != nil {
		t.Fatalf("patch answered %v", got)
	}
	e.must("PATCH", path, alice, map[string]any{"selected_repository": "octo/app", "selected_branch": "dev", "git_provider": "gitlab", "title": nil}, http.StatusOK, &got)
	if got["title"] != "Renamed" || got["public"] != true || got["selected_repository"] != "octo/app" ||
		got["selected_branch"] != "dev" || got["git_provider"] != "gitlab" {
		t.Fatalf("second patch answered %v", got)
	}
	var page v1ConvPage
	e.must("GET", "/api/v1/app-conversations/search?title__contains=renamed", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].ID != c.ID {
		t.Fatalf("search by the new title: %+v", page.Items)
	}

	status, body := e.call("PATCH", path, alice, map[string]any{"git_provider": "cvs"})
	wantProblem(t, status, body, "enum", "body", "git_provider")
	status, body = e.call("PATCH", path, alice, map[string]any{"title": "   "})
	wantProblem(t, status, body, "value_error", "body", "title")
	status, body = e.call("PATCH", path, alice, map[string]any{"public": "yes"})
	wantProblem(t, status, body, "bool_type", "body", "public")
	status, body = e.call("PATCH", path, alice, map[string]any{"colour": "blue"})
	wantProblem(t, status, body, "extra_forbidden", "body", "colour")
	if status, body := e.call("PATCH", "/api/v1/app-conversations/not-a-uuid", alice, map[string]any{"public": false}); status != http.StatusBadRequest {
		t.Errorf("patch of a malformed id: %d %s, want 400", status, body)
	}
	if status, body := e.call("PATCH", path, bob, map[string]any{"public": false}); status != http.StatusNotFound {
		t.Errorf("bob patches alice's conversation: %d %s, want 404", status, body)
	}
}

// TestV1Delete: DELETE answers {"success": true} and removes the conversation with its
// sandbox; then it is a 404.
func TestV1Delete(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	_, c := e.newConversation(alice, map[string]any{})
	path := "/api/v1/app-conversations/" + c.ID
	if status, _ := e.call("DELETE", path, bob, nil); status != http.StatusNotFound {
		t.Fatalf("bob deletes alice's conversation: %d, want 404", status)
	}
	var ok struct {
		Success bool `json:"success"`
	}
	e.must("DELETE", path, alice, nil, http.StatusOK, &ok)
	if !ok.Success || e.getConversation(alice, c.ID) != nil || e.getSandbox(alice, c.SandboxID) != nil {
		t.Fatalf("after delete: success %v, conversation %+v, sandbox %+v", ok.Success, e.getConversation(alice, c.ID), e.getSandbox(alice, c.SandboxID))
	}
	if status, _ := e.call("DELETE", path, alice, nil); status != http.StatusNotFound {
		t.Errorf("second delete: %d, want 404", status)
	}
	if status, _ := e.call("DELETE", "/api/v1/app-conversations/nope", alice, nil); status != http.StatusBadRequest {
		t.Errorf("delete of a malformed id: %d, want 400", status)
	}
}

// TestV1StartFields: the start request takes OpenHands' fields and applies them; what agentd
// does not support, and what it does not know, is a 422 naming it.
func TestV1StartFields(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	llm := e.scripted(alice, llmtest.Text("Done."))
	want := "0123456789abcdef0123456789abcdef"
	task := e.startConversation(alice, map[string]any{
		"conversation_id": "01234567-89AB-CDEF-0123-456789ABCDEF", "public": false,
		"tags": map[string]any{"automation": "nightly"}, "plugins": []any{}, "dependency_repos": []any{},
		"system_message_suffix": "Always answer in French.", "initial_message": message("hi", true),
	})
	if id := e.waitTaskReady(alice, task.ID); id != want {
		t.Fatalf("conversation id %s, want %s", id, want)
	}
	e.settleAgent(alice, want)
	var raw map[string]json.RawMessage
	e.must("GET", "/api/v1/app-conversations?ids="+want, alice, nil, http.StatusOK, &[]*map[string]json.RawMessage{&raw})
	if string(raw["public"]) != "false" || string(raw["tags"]) != `{"automation":"nightly"}` {
		t.Errorf("public %s tags %s", raw["public"], raw["tags"])
	}
	reqs := llm.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), "Always answer in French.") {
		t.Errorf("the system message suffix did not reach the model")
	}
	status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"conversation_id": want})
	if status != http.StatusConflict {
		t.Errorf("start with a taken conversation_id: %d %s, want 409", status, body)
	}

	for _, tc := range []struct {
		name string
		body map[string]any
		typ  string
		loc  []any
	}{
		{"unknown field", map[string]any{"colour": "blue"}, "extra_forbidden", []any{"body", "colour"}},
		{"plugins", map[string]any{"plugins": []any{map[string]any{"source": "github:o/r"}}}, "value_error", []any{"body", "plugins"}},
		{"dependency repos", map[string]any{"dependency_repos": []any{"o/r"}}, "value_error", []any{"body", "dependency_repos"}},
		{"conversation id", map[string]any{"conversation_id": "nope"}, "uuid_parsing", []any{"body", "conversation_id"}},
		{"tags", map[string]any{"tags": map[string]any{"n": 1}}, "string_type", []any{"body", "tags", "n"}},
		// What a conversation's row keeps, and every listing shows, is bounded as a rename bounds it.
		{"title too long", map[string]any{"title": strings.Repeat("t", 201)}, "string_too_long", []any{"body", "title"}},
		{"repository too long", map[string]any{"selected_repository": strings.Repeat("r", 301)}, "string_too_long", []any{"body", "selected_repository"}},
		{"branch too long", map[string]any{"selected_branch": strings.Repeat("b", 301)}, "string_too_long", []any{"body", "selected_branch"}},
		{"model too long", map[string]any{"llm_model": strings.Repeat("m", 501)}, "string_too_long", []any{"body", "llm_model"}},
		{"too many pull requests", map[string]any{"pr_number": make([]int, 101)}, "too_long", []any{"body", "pr_number"}},
		{"too many tags", map[string]any{"tags": manyTags(51)}, "too_long", []any{"body", "tags"}},
		{"tag key too long", map[string]any{"tags": map[string]any{strings.Repeat("k", 65): "v"}}, "string_too_long", []any{"body", "tags", strings.Repeat("k", 65), "[key]"}},
		{"tag value too long", map[string]any{"tags": map[string]any{"k": strings.Repeat("v", 257)}}, "string_too_long", []any{"body", "tags", "k"}},
	} {
		status, body := e.call("POST", "/api/v1/app-conversations", alice, tc.body)
		t.Run(tc.name, func(t *testing.T) { wantProblem(t, status, body, tc.typ, tc.loc...) })
	}
	var n int
	e.must("GET", "/api/v1/app-conversations/count", alice, nil, http.StatusOK, &n)
	if n != 1 {
		t.Errorf("%d conversations after the refused starts, want 1", n)
	}
	// At the bounds, it is taken.
	e.startConversation(alice, map[string]any{"title": strings.Repeat("t", 200), "tags": manyTags(50),
		"selected_branch": strings.Repeat("b", 300), "llm_model": strings.Repeat("m", 500)})
}

// manyTags are n tags, each at the longest key and value.
func manyTags(n int) map[string]any {
	tags := map[string]any{}
	for i := range n {
		tags[fmt.Sprintf("%064d", i)] = strings.Repeat("v", 256)
	}
	return tags
}

// TestV1SendMessage: send-message adds a user message the agent answers while the sandbox
// runs, and answers OpenHands' statuses when it does not.
func TestV1SendMessage(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, c := e.newConversation(alice, map[string]any{"initial_message": message("first", true)})
	path := "/api/v1/app-conversations/" + c.ID + "/send-message"
	// The first answer comes first: a message that reached a running loop would be answered
	// together with the first, and the count below would be one short.
	messages := func() int {
		var n int
		e.must("GET", "/api/v1/conversation/"+c.ID+"/events/count?kind__eq=MessageEvent", alice, nil, http.StatusOK, &n)
		return n
	}
	e.eventually("the agent to answer the first message", func() bool { return messages() >= 2 })
	e.settleAgent(alice, c.ID)
	var got map[string]any
	e.must("POST", path, alice, map[string]any{"content": []any{map[string]any{"type": "text", "text": "second"}}}, http.StatusOK, &got)
	if got["success"] != true || got["sandbox_status"] != "RUNNING" || got["message"] != nil || len(got) != 3 {
		t.Fatalf("send-message answered %v", got)
	}
	e.eventually("the agent to answer the second message", func() bool {
		return messages() >= 4 // two user messages, two answers
	}, func() string {
		var page struct {
			Items []wireEvent `json:"items"`
		}
		e.must("GET", "/api/v1/conversation/"+c.ID+"/events/search", alice, nil, http.StatusOK, &page)
		return strings.Join(labels(page.Items), " ")
	})
	e.settleAgent(alice, c.ID)
	if texts := e.userTexts(alice, c.ID); !slices.Equal(texts, []string{"first", "second"}) {
		t.Fatalf("user messages %q", texts)
	}

	status, body := e.call("POST", path, alice, map[string]any{"content": []any{}})
	wantProblem(t, status, body, "too_short", "body", "content")
	status, body = e.call("POST", path, alice, map[string]any{"role": "assistant", "content": []any{map[string]any{"text": "x"}}})
	wantProblem(t, status, body, "value_error", "body", "role")
	text := map[string]any{"content": []any{map[string]any{"text": "x"}}}
	if status, _ := e.call("POST", "/api/v1/app-conversations/"+strings.Repeat("0", 32)+"/send-message", alice, text); status != http.StatusNotFound {
		t.Errorf("unknown conversation: %d, want 404", status)
	}
	e.must("POST", "/api/v1/sandboxes/"+c.SandboxID+"/pause", alice, nil, http.StatusOK, nil)
	if status, body := e.call("POST", path, alice, text); status != http.StatusConflict || !strings.Contains(string(body), "resume") {
		t.Errorf("paused sandbox: %d %s, want 409 saying to resume", status, body)
	}
	e.must("DELETE", "/api/v1/sandboxes/"+c.SandboxID, alice, nil, http.StatusOK, nil)
	if status, body := e.call("POST", path, alice, text); status != http.StatusGone {
		t.Errorf("deleted sandbox: %d %s, want 410", status, body)
	}
}

// TestV1PendingMessages: messages sent while a conversation starts, by its start task's id as
// the web app sends them, reach its log in order after the first message, across a restart.
// A conversation that is ready gets its message at once.
func TestV1PendingMessages(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	task := e.startConversation(alice, map[string]any{"initial_message": message("first", true)})
	var queued []map[string]any
	for _, id := range []string{"task-" + task.ID, dashed(task.ID)} {
		var got map[string]any
		e.must("POST", "/api/v1/conversations/"+id+"/pending-messages", alice,
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "after " + id[:4]}}}, http.StatusCreated, &got)
		queued = append(queued, got)
	}
	// The server stops while the conversation starts (or just after): nothing is lost.
	e.restart()
	convID := e.waitTaskReady(alice, task.ID)
	for i, q := range queued {
		if id, _ := q["id"].(string); id == "" || (q["queued"] == true) != (q["position"] != 0.0) {
			t.Errorf("pending message %d answered %v", i, q)
		}
	}
	want := []string{"first", "after task", "after " + dashed(task.ID)[:4]}
	e.eventually("the pending messages in the log", func() bool {
		return slices.Equal(e.userTexts(alice, convID), want)
	}, func() string { return strings.Join(e.userTexts(alice, convID), " | ") })
	e.settleAgent(alice, convID)

	// Ready now: the message is sent at once.
	var got map[string]any
	e.must("POST", "/api/v1/conversations/"+convID+"/pending-messages", alice,
		map[string]any{"content": []any{map[string]any{"text": "later"}}}, http.StatusCreated, &got)
	if got["queued"] != false || got["position"] != 0.0 {
		t.Errorf("message to a ready conversation answered %v", got)
	}
	e.eventually("the late message in the log", func() bool {
		return slices.Equal(e.userTexts(alice, convID), append(want, "later"))
	})
	e.settleAgent(alice, convID)

	status, body := e.call("POST", "/api/v1/conversations/"+convID+"/pending-messages", alice, map[string]any{"content": []any{}})
	wantProblem(t, status, body, "too_short", "body", "content")
	if status, _ := e.call("POST", "/api/v1/conversations/"+convID+"/pending-messages", bob, map[string]any{"content": []any{map[string]any{"text": "x"}}}); status != http.StatusNotFound {
		t.Errorf("bob queues on alice's conversation: %d, want 404", status)
	}
	if status, _ := e.call("POST", "/api/v1/conversations/task-nope/pending-messages", alice, map[string]any{"content": []any{map[string]any{"text": "x"}}}); status != http.StatusBadRequest {
		t.Errorf("malformed id: %d, want 400", status)
	}
}

// TestV0Rename: the web app renames with PATCH /api/conversations/{id} and reads true; the
// title is then the user's, in both generations' views, and bad titles are 422s.
func TestV0Rename(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	_, c := e.newConversation(alice, map[string]any{})
	path := "/api/conversations/" + dashed(c.ID)
	if body := e.must("PATCH", path, alice, map[string]any{"title": "  Fix the login page "}, http.StatusOK, nil); strings.TrimSpace(string(body)) != "true" {
		t.Fatalf("rename answered %s, want true", body)
	}
	if got := e.getConversation(alice, c.ID); got == nil || got.Title == nil || *got.Title != "Fix the login page" {
		t.Fatalf("V1 view after the rename: %+v", got)
	}
	var info struct {
		Title string `json:"title"`
	}
	e.must("GET", "/api/conversations/"+c.ID, alice, nil, http.StatusOK, &info)
	if info.Title != "Fix the login page" {
		t.Errorf("V0 view after the rename: %q", info.Title)
	}

	for _, tc := range []struct {
		name string
		body any
		typ  string
		loc  []any
	}{
		{"blank", map[string]any{"title": "  "}, "value_error", []any{"body", "title"}},
		{"empty", map[string]any{"title": ""}, "string_too_short", []any{"body", "title"}},
		{"too long", map[string]any{"title": strings.Repeat("x", 201)}, "string_too_long", []any{"body", "title"}},
		{"missing", map[string]any{}, "missing", []any{"body", "title"}},
		{"unknown field", map[string]any{"title": "x", "public": true}, "extra_forbidden", []any{"body", "public"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("PATCH", path, alice, tc.body)
			wantProblem(t, status, body, tc.typ, tc.loc...)
		})
	}
	if status, body := e.call("PATCH", path, bob, map[string]any{"title": "Mine"}); status != http.StatusNotFound {
		t.Errorf("bob renames alice's conversation: %d %s, want 404", status, body)
	}
	if status, body := e.call("PATCH", "/api/conversations/"+strings.Repeat("a", 101), alice, map[string]any{"title": "x"}); status != http.StatusBadRequest {
		t.Errorf("rename of a malformed id: %d %s, want 400", status, body)
	}
}
