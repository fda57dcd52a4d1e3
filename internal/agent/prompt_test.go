package agent

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/agentd/agentd/internal/event"
)

// TestIncrementalPrompt: the prompt built step by step, as the loop builds it, is at every
// length of the log the prompt built from the whole log: with calls of one response merged,
// messages waiting for unanswered calls, calls never answered, consecutive user messages
// merged, condensations (which start it again) and a system text that changes.
func TestIncrementalPrompt(t *testing.T) {
	mk := func(id string, body event.Body, source string) entry {
		ev, err := event.New(id, t0, source, body)
		if err != nil {
			t.Fatal(err)
		}
		return entry{ev: ev, body: body}
	}
	user := func(id, text string) entry {
		ev, err := event.NewUserMessage(id, t0, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := event.Decode(ev)
		return entry{ev: ev, body: b}
	}
	act := func(id, call, resp string) entry {
		return mk(id, &event.ActionEvent{ToolName: "think", ToolCallID: call, LLMResponseID: resp,
			ToolCall: event.ToolCall{ID: call, Name: "think", Arguments: `{"thought":"` + id + `"}`}}, event.SourceAgent)
	}
	obs := func(id, call string) entry {
		e := mk(id, &event.ObservationEvent{ToolName: "think", ToolCallID: call}, event.SourceEnvironment)
		e.ev.LLMText = "result of " + call
		return e
	}
	condense := func(id string, forget []string, offset int) entry {
		s := "summary " + id
		return mk(id, &event.Condensation{ForgottenEventIDs: forget, Summary: &s, SummaryOffset: &offset}, event.SourceEnvironment)
	}
	log := []entry{
		user("u1", "start"),
		act("a1", "c1", "r1"), act("a2", "c2", "r1"), user("u2", "waits for c1 and c2"),
		obs("o1", "c1"), obs("o2", "c2"),
		user("u3", "one"), user("u4", "two, merged with one"),
		act("a3", "c3", "r2"), // answered only after a condensation
		condense("k1", []string{"a1", "a2", "u2", "o1", "o2"}, 1),
		obs("o3", "c3"),
		act("a4", "c4", "r3"), // never answered
		user("u5", "after an unanswered call"),
		act("a5", "c5", "r4"), obs("o5", "c5"),
		condense("k2", []string{"k1-summary", "u3"}, 0),
		act("a6", "c6", "r5"), obs("o6", "c6"),
	}
	var view viewState
	var prompt promptState
	for n := 0; n <= len(log); n++ {
		system := fmt.Sprintf("system %d", n/5) // changes now and then, as skills activate
		got := prompt.messages(system, view.extend(log[:n]), view.gen)
		want := buildMessages(system, buildView(log[:n]))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d events:\n got %+v\nwant %+v", n, got, want)
		}
		// A second call without new events gives the same again: the snapshot left the
		// builder as it was.
		if again := prompt.messages(system, view.extend(log[:n]), view.gen); !reflect.DeepEqual(again, want) {
			t.Fatalf("after %d events, asked twice:\n got %+v\nwant %+v", n, again, want)
		}
	}
}
