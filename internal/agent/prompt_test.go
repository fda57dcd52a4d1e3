package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
)

// TestIncrementalPrompt: the prompt built step by step, as the loop builds it, is at every
// length of the log the prompt built from the whole log: with calls of one response merged,
// messages waiting for unanswered calls, calls never answered, consecutive user messages
// merged, condensations (which start it again), a system text that changes, and tool
// observations with images, sent to a model that takes them and left out for one that does not.
func TestIncrementalPrompt(t *testing.T) {
	mk := func(id string, body event.Body, source string) *entry {
		ev, err := event.New(id, t0, source, body)
		if err != nil {
			t.Fatal(err)
		}
		return &entry{ev: ev, body: body}
	}
	user := func(id, text string) *entry {
		ev, err := event.NewUserMessage(id, t0, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := event.Decode(ev)
		return &entry{ev: ev, body: b}
	}
	act := func(id, call, resp string) *entry {
		return mk(id, &event.ActionEvent{ToolName: "think", ToolCallID: call, LLMResponseID: resp,
			ToolCall: event.ToolCall{ID: call, Name: "think", Arguments: `{"thought":"` + id + `"}`}}, event.SourceAgent)
	}
	obs := func(id, call string) *entry {
		e := mk(id, &event.ObservationEvent{ToolName: "think", ToolCallID: call}, event.SourceEnvironment)
		e.ev.LLMText = "result of " + call
		return e
	}
	withImage := func(id, call string) *entry {
		e := mk(id, &event.ObservationEvent{ToolName: "screenshot", ToolCallID: call,
			Observation: json.RawMessage(`{"kind":"MCPToolObservation","content":[{"type":"text","text":"a page"},{"type":"image","image_urls":["data:image/png;base64,` + id + `"]}]}`)},
			event.SourceEnvironment)
		e.ev.LLMText = "a page"
		return e
	}
	condense := func(id string, forget []string, offset int) *entry {
		s := "summary " + id
		return mk(id, &event.Condensation{ForgottenEventIDs: forget, Summary: &s, SummaryOffset: &offset}, event.SourceEnvironment)
	}
	log := []*entry{
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
		act("a7", "c7", "r6"), withImage("o7", "c7"),
	}
	for _, vision := range []bool{false, true} {
		var view viewState
		var prompt promptState
		// Every prompt returned, and a deep copy of it: none may change as the builder goes on
		// (it shares its messages with the last prompt it returned).
		var returned, copies [][]llm.Message
		for n := 0; n <= len(log); n++ {
			if n > 0 {
				view.add(log[n-1])
			}
			system := fmt.Sprintf("system %d", n/5) // changes now and then, as skills activate
			got := prompt.messages(system, view.items, view.gen, vision)
			want := buildMessages(system, buildView(log[:n]), vision)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("vision %v, after %d events:\n got %+v\nwant %+v", vision, n, got, want)
			}
			returned, copies = append(returned, got), append(copies, deepCopy(got))
			// A second call without new events gives the same again: the snapshot left the
			// builder as it was.
			if again := prompt.messages(system, view.items, view.gen, vision); !reflect.DeepEqual(again, want) {
				t.Fatalf("vision %v, after %d events, asked twice:\n got %+v\nwant %+v", vision, n, again, want)
			}
		}
		for i := range returned {
			if !reflect.DeepEqual(returned[i], copies[i]) {
				t.Fatalf("vision %v: prompt %d changed after it was returned:\n now %+v\nwas %+v", vision, i, returned[i], copies[i])
			}
		}
		// The image reached the prompt only for a model that takes images.
		msgs := prompt.messages("system", view.items, view.gen, vision)
		last := msgs[len(msgs)-1]
		if last.Role != llm.RoleTool || last.ToolCallID != "c7" || len(last.Parts) != 1+map[bool]int{false: 0, true: 1}[vision] {
			t.Fatalf("vision %v: the screenshot's answer is %+v", vision, last)
		}
	}
	// A prompt built without vision starts again when asked with it (the same model always
	// asks the same way, but the state must not mix the two).
	var view viewState
	for _, e := range log {
		view.add(e)
	}
	var prompt promptState
	prompt.messages("system", view.items, view.gen, false)
	if got, want := prompt.messages("system", view.items, view.gen, true), buildMessages("system", buildView(log), true); !reflect.DeepEqual(got, want) {
		t.Fatalf("vision turned on:\n got %+v\nwant %+v", got, want)
	}
}

// deepCopy copies msgs and everything they hold.
func deepCopy(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		m.Parts = slices.Clone(m.Parts)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		out[i] = m
	}
	return out
}

// TestTakenEventsAreLightened: once the loop took an observation, it holds the text the model
// reads and, only when the observation may show images, its object; what the loop learned
// from the object (the task list) stays. An action keeps its object until it has a result.
func TestTakenEventsAreLightened(t *testing.T) {
	obs := func(id, name, call, llmText, object string) event.Event {
		ev, err := event.New(id, t0, event.SourceEnvironment, &event.ObservationEvent{ToolName: name, ToolCallID: call, Observation: json.RawMessage(object)})
		if err != nil {
			t.Fatal(err)
		}
		ev.LLMText = llmText
		return ev
	}
	output := `{"kind":"TerminalObservation","content":[{"type":"text","text":"a long output"}]}`
	shot := `{"kind":"MCPToolObservation","content":[{"type":"image","image_urls":["data:image/png;base64,AAAA"]}]}`
	tasks := `{"kind":"TaskTrackerObservation","content":[{"type":"text","text":"1 task"}],"task_list":[{"title":"write it","status":"todo"}]}`
	act := func(id, call string) event.Event {
		ev, err := event.New(id, t0, event.SourceAgent, &event.ActionEvent{ToolName: "terminal", ToolCallID: call,
			Action: json.RawMessage(`{"kind":"TerminalAction","command":"ls"}`), ToolCall: event.ToolCall{ID: call, Name: "terminal", Arguments: `{"command":"ls"}`}})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	var a Agent
	if err := a.take([]event.Event{
		act("a1", "c1"), act("a4", "c4"),
		obs("o1", "terminal", "c1", "a long output", output),
		obs("o2", "snapshot", "c2", "a page", shot),
		obs("o3", "task_tracker", "c3", "1 task", tasks),
	}); err != nil {
		t.Fatal(err)
	}
	// An action answered drops its object; one still waiting keeps it, to be run.
	if a1, a4 := a.view.items[0].action(), a.view.items[1].action(); a1.Action != nil || a4.Action == nil || a1.ToolCall.Arguments == "" {
		t.Errorf("action objects: answered %s, waiting %s", a1.Action, a4.Action)
	}
	if p := a.orphans(); len(p) != 1 || p[0].ToolCallID != "c4" {
		t.Errorf("pending %+v", p)
	}
	var kept []string
	for _, it := range a.view.items[2:] {
		o := it.e.body.(*event.ObservationEvent)
		if o.Observation != nil {
			kept = append(kept, o.ToolName)
		}
		if it.e.ev.LLMText == "" {
			t.Errorf("the text of %s is gone", o.ToolName)
		}
	}
	if !slices.Equal(kept, []string{"snapshot"}) {
		t.Errorf("objects kept: %q, want the snapshot's only", kept)
	}
	if len(a.taskList) != 1 || a.taskList[0].Title != "write it" {
		t.Errorf("task list %+v", a.taskList)
	}
}
