package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// isSummaryRequest tells the summarizer's calls from the agent's: they carry no tools.
func isSummaryRequest(req llmtest.RecordedRequest) bool { return len(req.Tools) == 0 }

func TestCondensationKeepsTheFirstAndTheRecentEvents(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		var steps []llmtest.Step
		for i := range 4 {
			steps = append(steps, llmtest.Calls(llmtest.Call("terminal", fmt.Sprintf(`{"command":"echo %d"}`, i))))
		}
		r := newRig(t, p, steps...)
		// The summary is asked for when the view passes 8 events: after four calls.
		r.srv.Push(llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if !isSummaryRequest(req) {
				t.Errorf("expected the summary request, got an agent call")
			}
			return llmtest.Text("USER_CONTEXT: the user wants echoes.\nDONE: echo 0 to echo 2.")
		}})
		r.srv.Push(llmtest.Calls(llmtest.Call("finish", `{"message":"echoed"}`)))
		r.cfg.CondenserMaxEvents = 8
		r.cfg.CondenserKeepFirst = 2
		r.log.userSays(t, "echo numbers")
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s", st)
		}
		conds := r.log.bodies(event.KindCondensation)
		if len(conds) != 1 {
			t.Fatalf("%d condensations", len(conds))
		}
		c := conds[0].(*event.Condensation)
		if c.Summary == nil || !strings.Contains(*c.Summary, "DONE: echo 0") || c.SummaryOffset == nil || *c.SummaryOffset != 3 {
			t.Fatalf("condensation %+v", c)
		}
		reqs := r.srv.Requests()
		var sum, after llmtest.RecordedRequest
		for i, req := range reqs {
			if isSummaryRequest(req) {
				sum, after = req, reqs[i+1]
			}
		}
		if !strings.Contains(sum.System, "CODE_STATE") || !strings.Contains(sum.Messages[0].Text(), "[ACTION terminal]") {
			t.Fatalf("summary request %q / %q", sum.System, sum.Messages[0].Text())
		}
		// After condensing: the user's message, the first pair kept, the summary, the tail;
		// every tool call still answered right after it.
		msgs := after.Messages
		if msgs[0].Text() != "echo numbers" {
			t.Fatalf("first message %q", msgs[0].Text())
		}
		var summaryAt = -1
		for i, m := range msgs {
			if m.Role == llm.RoleUser && strings.Contains(m.Text(), "DONE: echo 0") {
				summaryAt = i
			}
		}
		if summaryAt < 0 {
			t.Fatal("the summary was not sent")
		}
		texts := strings.Join(toolTexts(after), "|")
		// Kept: the user's message and the first call (keep_first 2 moved forward so as not to
		// split the call from its result); forgotten: echo 1; kept: the tail, echo 2 and 3.
		if strings.Contains(texts, "ran echo 1") || !strings.Contains(texts, "ran echo 0") || !strings.Contains(texts, "ran echo 3") {
			t.Fatalf("tool results after condensing: %s", texts)
		}
		for i, m := range msgs {
			if len(m.ToolCalls) > 0 && (i+1 >= len(msgs) || msgs[i+1].Role != llm.RoleTool || msgs[i+1].ToolCallID != m.ToolCalls[0].ID) {
				t.Fatalf("call %d is not followed by its result: %+v", i, msgs)
			}
		}
		// user, echo 0 and its result, the summary, echo 2 and 3 with theirs (9 without it).
		if len(msgs) != 8 {
			t.Errorf("%d messages after condensing, want 8", len(msgs))
		}
	})
}

func TestContextWindowErrorCondenses(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"cat big.log"}`)),
		llmtest.Calls(llmtest.Call("terminal", `{"command":"cat big2.log"}`)),
		llmtest.ContextWindowExceeded(),
		llmtest.Text("SUMMARY: two big logs were read."),
		llmtest.Text("The logs show nothing wrong."),
	)
	r.cfg.CondenserKeepFirst = 1
	r.log.userSays(t, "read the logs")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	if n := len(r.log.bodies(event.KindCondensation)); n != 1 {
		t.Fatalf("%d condensations", n)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 5 || !isSummaryRequest(reqs[3]) || isSummaryRequest(reqs[4]) {
		t.Fatalf("requests: %d", len(reqs))
	}
	if got := toolTexts(reqs[4]); len(got) != 1 || !strings.Contains(got[0], "big2") {
		t.Fatalf("tool results after condensing %q", got)
	}
}

func TestContextWindowErrorWithNothingToCondense(t *testing.T) {
	r := newRig(t, 0, llmtest.ContextWindowExceeded())
	r.log.userSays(t, strings.Repeat("very long ", 100))
	if st := r.run(); st != StatusError {
		t.Fatalf("status %s", st)
	}
	if e := r.log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent); e.Code != "LLMContextWindowExceedError" {
		t.Fatalf("event %+v", e)
	}
}

func TestViewAppliesCondensationsInOrder(t *testing.T) {
	l := &memLog{}
	for i := range 6 {
		ev, _ := event.NewUserMessage(fmt.Sprintf("m%d", i), t0, fmt.Sprint(i), nil)
		l.Append(t.Context(), []event.Event{ev})
	}
	s1, off1 := "first summary", 1
	c1, _ := event.New("c1", t0, event.SourceEnvironment, &event.Condensation{ForgottenEventIDs: []string{"m1", "m2"}, Summary: &s1, SummaryOffset: &off1})
	l.Append(t.Context(), []event.Event{c1})
	s2, off2 := "second summary", 1
	c2, _ := event.New("c2", t0, event.SourceEnvironment, &event.Condensation{ForgottenEventIDs: []string{"c1-summary", "m3"}, Summary: &s2, SummaryOffset: &off2})
	l.Append(t.Context(), []event.Event{c2})
	var entries []*entry
	for _, e := range l.all() {
		b, _ := event.Decode(e)
		entries = append(entries, &entry{ev: e, body: b})
	}
	var got []string
	for _, it := range buildView(entries) {
		got = append(got, it.id)
	}
	if want := []string{"m0", "c2-summary", "m4", "m5"}; !slices.Equal(got, want) {
		t.Fatalf("view %v, want %v", got, want)
	}
}

func TestForgetRangeNeverSplitsACall(t *testing.T) {
	act := func(id string) item {
		return item{id: id, e: &entry{body: &event.ActionEvent{ToolCallID: id}}}
	}
	obs := func(id string) item {
		return item{id: "o" + id, e: &entry{body: &event.ObservationEvent{ToolCallID: id}}}
	}
	msg := item{id: "m", e: &entry{body: &event.MessageEvent{}}}
	view := []item{msg, act("1"), obs("1"), act("2"), act("3"), obs("2"), obs("3"), act("4"), msg, obs("4"), msg}
	for _, tc := range []struct{ keep, tail, from, to int }{
		{1, 9, 1, 7}, // the tail may not start between act 4 and its result
		{2, 9, 3, 7}, // nor may the kept head end between act 1 and its result
		{4, 6, 7, 7}, // nothing safe between: no range
		{1, 3, 1, 3},
	} {
		from, to, ok := forgetRange(view, tc.keep, tc.tail)
		if from != tc.from || to != tc.to || ok != (tc.to > tc.from) {
			t.Errorf("keep %d tail %d: [%d, %d) %v, want [%d, %d)", tc.keep, tc.tail, from, to, ok, tc.from, tc.to)
		}
	}
}

func TestMessagesBackfillAndMerge(t *testing.T) {
	mkAct := func(id, resp string) *entry {
		return &entry{body: &event.ActionEvent{ToolName: "think", ToolCallID: id, LLMResponseID: resp,
			ToolCall: event.ToolCall{ID: id, Name: "think", Arguments: "not json"}}}
	}
	user := &entry{body: &event.MessageEvent{Base: event.Base{Source: event.SourceUser}, LLMMessage: event.LLMMessage{Role: "user", Content: []any{event.Text("more")}}}}
	view := []item{
		{e: mkAct("a", "r1")}, {e: mkAct("b", "r1")}, {e: user},
		{e: &entry{ev: event.Event{LLMText: "got a"}, body: &event.ObservationEvent{ToolCallID: "a", ToolName: "think"}}},
		// b is never answered: the loop was interrupted.
		{e: mkAct("c", "r2")},
	}
	msgs := buildMessages("sys", view, false)
	var shape []string
	for _, m := range msgs {
		s := string(m.Role)
		for _, c := range m.ToolCalls {
			s += ":" + c.ID + "=" + c.Arguments
		}
		if m.ToolCallID != "" {
			s += ":" + m.ToolCallID + "=" + m.Text()
		}
		shape = append(shape, s)
	}
	want := []string{"system", "assistant:a={}:b={}", "tool:a=got a", "tool:b=" + noResultRecorded, "user", "assistant:c={}", "tool:c=" + noResultRecorded}
	if !slices.Equal(shape, want) {
		t.Fatalf("messages\n %v\nwant\n %v", shape, want)
	}
}
