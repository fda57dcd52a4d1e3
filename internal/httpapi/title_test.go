package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// title reads a conversation's title as the V1 API shows it.
func (e *env) title(key, convID string) string {
	e.t.Helper()
	c := e.getConversation(key, convID)
	if c == nil || c.Title == nil {
		e.t.Fatalf("conversation %s has no title: %+v", convID, c)
	}
	return *c.Title
}

// waitTitle waits until the conversation's title is want.
func (e *env) waitTitle(key, convID, want string) {
	e.t.Helper()
	var got string
	e.eventually("title "+want, func() bool {
		got = e.title(key, convID)
		return got == want
	}, func() string { return "it is " + got })
}

// usage reads a conversation's accumulated token usage.
func (e *env) usage(key, convID string) (prompt, completion int64, cost float64) {
	e.t.Helper()
	var list []*struct {
		Metrics *llm.MetricsSnapshot `json:"metrics"`
	}
	e.must("GET", "/api/v1/app-conversations?ids="+convID, key, nil, http.StatusOK, &list)
	m := list[0].Metrics
	if m == nil || m.AccumulatedTokenUsage == nil {
		return 0, 0, 0
	}
	return m.AccumulatedTokenUsage.PromptTokens, m.AccumulatedTokenUsage.CompletionTokens, m.AccumulatedCost
}

// TestTitleFromModel: the conversation's model names it after its first message, with the
// user's model and key, bounded in tokens; the call's usage counts in the conversation's
// metrics beside the agent's.
func TestTitleFromModel(t *testing.T) {
	e := newEnv(t, withTitles)
	_, alice := e.newUser("alice")
	model := e.scripted(alice, llmtest.Step{Reply: &llmtest.Reply{Text: "Done.", Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 50}}})
	model.Beside(llmtest.Step{Reply: &llmtest.Reply{Text: "Title: \"Fix the login page crash.\"\nIt fails on submit.", Usage: llm.Usage{PromptTokens: 60, CompletionTokens: 8}}})
	task := e.startConversation(alice, map[string]any{"initial_message": message("The login page crashes with a 500 when I submit the form", true)})
	conv := e.waitTaskReady(alice, task.ID)
	e.waitTitle(alice, conv, "Fix the login page crash")
	e.settleAgent(alice, conv)
	e.eventually("the title's usage in the metrics", func() bool {
		p, c, _ := e.usage(alice, conv)
		return p == 1060 && c == 58
	}, func() string {
		p, c, _ := e.usage(alice, conv)
		return "prompt " + itoa(int(p)) + ", completion " + itoa(int(c))
	})
	if _, _, cost := e.usage(alice, conv); cost <= llm.Cost("gpt-4o", llm.Usage{PromptTokens: 1000, CompletionTokens: 50}) {
		t.Errorf("cost %v does not count the title call", cost)
	}

	var titleReq *llmtest.RecordedRequest
	for _, r := range model.Requests() {
		if len(r.Tools) == 0 {
			titleReq = &r
		}
	}
	switch {
	case titleReq == nil:
		t.Fatal("no title request reached the model")
	case titleReq.Model != "gpt-4o" || titleReq.APIKey != llmtest.APIKey:
		t.Errorf("title request to model %q with key %q, want the conversation's", titleReq.Model, titleReq.APIKey)
	case titleReq.MaxTokens <= 0 || titleReq.MaxTokens > 64:
		t.Errorf("title request capped at %d tokens", titleReq.MaxTokens)
	case !strings.Contains(titleReq.Last().Text(), "The login page crashes with a 500"):
		t.Errorf("title request without the first message: %+v", titleReq.Messages)
	}

	// A later message, and another run, name nothing again.
	model.Push(llmtest.Text("Sure."))
	e.must("POST", "/api/v1/app-conversations/"+conv+"/send-message", alice, message("Also fix the signup page", true), http.StatusOK, nil)
	e.settleAgent(alice, conv)
	if got := e.title(alice, conv); got != "Fix the login page crash" {
		t.Errorf("title after a second message: %q", got)
	}
	if n := len(model.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3 (two agent runs, one title)", n)
	}
}

// TestTitleFallsBack: a title call that fails names the conversation after the start of its
// message, and the agent answers all the same; with titles from the message, no call is made.
func TestTitleFallsBack(t *testing.T) {
	long := "Please migrate the billing service from the old queue library to the new one and keep the retries"
	for _, tc := range []struct {
		name  string
		opt   envOption
		title string
	}{
		{"model fails", withTitles, "Please migrate the billing service from the old…"},
		{"from the message", func(c *config.Config) { c.ConversationTitles = "message" }, "Please migrate the billing service from the old…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opt)
			_, alice := e.newUser("alice")
			model := e.scripted(alice, llmtest.Text("On it."))
			if tc.name == "model fails" {
				model.Beside(llmtest.Fail(http.StatusBadRequest, "this model does not name things"))
			}
			task := e.startConversation(alice, map[string]any{"initial_message": message(long, true)})
			conv := e.waitTaskReady(alice, task.ID)
			e.waitTitle(alice, conv, tc.title)
			e.settleAgent(alice, conv)
			if c := e.getConversation(alice, conv); c.ExecutionStatus == nil || *c.ExecutionStatus != "finished" {
				t.Errorf("the agent did not finish: %+v", c)
			}
			want := 1
			if tc.name == "model fails" {
				want = 2
			}
			if n := len(model.Requests()); n != want {
				t.Errorf("%d model calls, want %d", n, want)
			}
		})
	}
}

// TestTitleKeepsTheUsers: a conversation started with a title, or renamed while its title is
// being written, keeps the user's title.
func TestTitleKeepsTheUsers(t *testing.T) {
	e := newEnv(t, withTitles)
	_, alice := e.newUser("alice")
	model := e.scripted(alice, llmtest.Text("One."), llmtest.Text("Two."))
	release := make(chan struct{})
	model.Beside(llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "t", "object": "chat.completion", "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "Generated"}}},
			"usage":   map[string]any{"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})
	}})

	// Named at the start: no title call at all.
	task := e.startConversation(alice, map[string]any{"title": "My own", "initial_message": message("hello", true)})
	named := e.waitTaskReady(alice, task.ID)
	e.settleAgent(alice, named)
	if got := e.title(alice, named); got != "My own" {
		t.Errorf("title %q, want the user's", got)
	}

	// Renamed while the model writes one.
	task = e.startConversation(alice, map[string]any{"initial_message": message("hello again", true)})
	renamed := e.waitTaskReady(alice, task.ID)
	e.eventually("the title call", func() bool { return len(model.Requests()) == 3 })
	e.must("PATCH", "/api/conversations/"+renamed, alice, map[string]any{"title": "Renamed"}, http.StatusOK, nil)
	close(release)
	e.eventually("the title call to be counted", func() bool { p, _, _ := e.usage(alice, renamed); return p >= 5 })
	if got := e.title(alice, renamed); got != "Renamed" {
		t.Errorf("title %q, want the user's", got)
	}
}

// TestTitleText: what the model answers is made a title: one line, without quotes, labels,
// markup or a final period, at most 80 characters cut at a word.
func TestTitleText(t *testing.T) {
	e := newEnv(t, withTitles)
	_, alice := e.newUser("alice")
	for _, tc := range []struct{ answer, want string }{
		{"**Refactor the parser**", "Refactor the parser"},
		{"  \n'Add dark mode'.\n", "Add dark mode"},
		{"# Title: Speed up CI", "Speed up CI"},
		{strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 15)) + "…"},
	} {
		model := e.scripted(alice, llmtest.Text("ok"))
		model.Beside(llmtest.Text(tc.answer))
		task := e.startConversation(alice, map[string]any{"initial_message": message("do it", true)})
		conv := e.waitTaskReady(alice, task.ID)
		e.waitTitle(alice, conv, tc.want)
		e.settleAgent(alice, conv)
	}
}
