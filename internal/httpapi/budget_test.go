package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestMaxBudgetPerTask: the user's max_budget_per_task stops the agent once its cost passes
// it, with execution_status error and a ConversationErrorEvent that says why; the metrics
// show the budget; a message sent after raising the budget continues the conversation.
func TestMaxBudgetPerTask(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	usage := llm.Usage{PromptTokens: 100_000, CompletionTokens: 10_000}
	perCall := llm.Cost("gpt-4o", usage)
	costly := func(s llmtest.Step) llmtest.Step { s.Reply.Usage = usage; return s }
	srv := e.scripted(alice,
		costly(llmtest.Calls(llmtest.Call("think", `{"thought":"plan"}`))),
		costly(llmtest.Calls(llmtest.Call("think", `{"thought":"plan more"}`))),
	)
	e.must("POST", "/api/settings", alice, map[string]any{"max_budget_per_task": 1.5 * perCall}, http.StatusOK, nil)

	c := e.startAgent(alice, map[string]any{"initial_message": message("plan the work", true)})
	if got := c.waitStatus("error", "finished"); got != "error" {
		t.Fatalf("execution status %s, want error once the budget is spent", got)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	var reached *wireEvent
	for _, ev := range c.events() {
		if ev.Kind == "ConversationErrorEvent" {
			reached = &ev
		}
	}
	if reached == nil || reached.Code != "MaxBudgetReached" || !strings.Contains(reached.Detail, "max_budget_per_task") {
		t.Fatalf("error event %+v, want MaxBudgetReached naming max_budget_per_task", reached)
	}
	var metrics struct {
		AccumulatedCost  float64  `json:"accumulated_cost"`
		MaxBudgetPerTask *float64 `json:"max_budget_per_task"`
	}
	if err := json.Unmarshal(c.info().Metrics, &metrics); err != nil {
		t.Fatal(err)
	}
	if metrics.MaxBudgetPerTask == nil || *metrics.MaxBudgetPerTask != 1.5*perCall || metrics.AccumulatedCost < 1.5*perCall {
		t.Fatalf("metrics %+v, want the budget and a cost past it", metrics)
	}

	srv.Push(llmtest.Text("Here is the plan."))
	e.must("POST", "/api/settings", alice, map[string]any{"max_budget_per_task": 10 * perCall}, http.StatusOK, nil)
	c.api("POST", "/events", message("you have more budget now", true), http.StatusOK, nil)
	if got := c.waitStatus("finished", "error"); got != "finished" {
		t.Fatalf("execution status %s after raising the budget, want finished", got)
	}
}
