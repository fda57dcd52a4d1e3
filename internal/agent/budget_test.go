package agent

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestMaxBudget: once the accumulated cost reaches max_budget_per_task, the run stops before
// the next model call with an error that says so; the stats carry the budget; a new message
// with a raised budget continues the conversation, while one without stops again at once.
func TestMaxBudget(t *testing.T) {
	usage := llm.Usage{PromptTokens: 100_000, CompletionTokens: 10_000}
	perCall := llm.Cost("gpt-4o", usage)
	if perCall <= 0 {
		t.Fatal("gpt-4o has no price: the test needs one")
	}
	think := func(s string) llmtest.Step {
		st := llmtest.Calls(llmtest.Call("think", `{"thought":"`+s+`"}`))
		st.Reply.Usage = usage
		return st
	}
	r := newRig(t, 0, think("one"), think("two"))
	r.cfg.MaxBudget = 1.5 * perCall // the second call passes it
	metrics := &llm.Metrics{}
	r.log.userSays(t, "think hard")
	if st := r.runWith(metrics); st != StatusError {
		t.Fatalf("status %s, want error", st)
	}
	if n := len(r.srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2: the run must stop once the budget is passed", n)
	}
	kinds := r.log.kinds()
	if got := kinds[len(kinds)-2:]; !slices.Equal(got, []string{"ConversationErrorEvent:MaxBudgetReached", "execution_status=error"}) {
		t.Fatalf("log ends %v", got)
	}
	errs := r.log.bodies(event.KindConversationError)
	if d := errs[0].(*event.ConversationErrorEvent).Detail; !strings.Contains(d, "budget") || !strings.Contains(d, "max_budget_per_task") {
		t.Fatalf("error detail %q does not say the budget was reached", d)
	}
	snap := metrics.Snapshot()
	if snap.MaxBudgetPerTask == nil || *snap.MaxBudgetPerTask != r.cfg.MaxBudget || math.Abs(snap.AccumulatedCost-2*perCall) > 1e-9 {
		t.Fatalf("metrics %+v, want the budget and the cost of two calls", snap)
	}

	// The same budget: a new message stops again without a model call.
	r.log.userSays(t, "go on")
	if st := r.runWith(metrics); st != StatusError || len(r.srv.Requests()) != 2 {
		t.Fatalf("status %s after %d calls, want error after 2", st, len(r.srv.Requests()))
	}

	// A raised budget: the conversation continues.
	r.srv.Push(llmtest.Text("Done thinking."))
	r.cfg.MaxBudget = 10 * perCall
	r.log.userSays(t, "go on, with more money")
	if st := r.runWith(metrics); st != StatusFinished {
		t.Fatalf("status %s with a raised budget, want finished", st)
	}
}

// runWith runs the rig's agent once with metrics carried over from earlier runs, as the
// runner does from the stored snapshot.
func (r *rig) runWith(m *llm.Metrics) Status {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log, Metrics: m}).Run(ctx)
	if err != nil {
		r.t.Fatalf("run: %v", err)
	}
	return st
}
