package agent

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

func repeat(n int, steps ...llmtest.Step) []llmtest.Step {
	var out []llmtest.Step
	for range n {
		out = append(out, steps...)
	}
	return out
}

func TestStuckOnTheSameActionAndResult(t *testing.T) {
	r := newRig(t, 0, repeat(5, llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`)))...)
	r.log.userSays(t, "list")
	if st := r.run(); st != StatusStuck {
		t.Fatalf("status %s", st)
	}
	if n := len(r.srv.Requests()); n != 4 {
		t.Fatalf("%d model calls, want 4", n)
	}
	e := r.log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent)
	if e.Code != "AgentStuckInLoop" || !strings.Contains(e.Detail, "same action with the same result") {
		t.Fatalf("event %+v", e)
	}
	// A new user message unsticks it.
	r.log.userSays(t, "try something else")
	r.srv.Push(llmtest.Text("ok"))
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status after a new message %s", st)
	}
}

func TestStuckOnTheSameErrorAfterANudge(t *testing.T) {
	r := newRig(t, 0, repeat(5, llmtest.Calls(llmtest.Call("terminal", `{"cmd":"ls"}`)))...)
	r.log.userSays(t, "list")
	if st := r.run(); st != StatusStuck {
		t.Fatalf("status %s", st)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(reqs))
	}
	// The fourth call saw the nudge, as a user message after the third error.
	last := reqs[3].Messages
	if m := last[len(last)-1]; m.Role != llm.RoleUser || m.Text() != nudgeRepeatedError {
		t.Fatalf("last message of the fourth call: %+v", m)
	}
	if n := strings.Count(strings.Join(r.log.kinds(), " "), "MessageEvent:environment"); n != 1 {
		t.Fatalf("%d nudges", n)
	}
}

func TestStuckOnAlternation(t *testing.T) {
	a := llmtest.Calls(llmtest.Call("terminal", `{"command":"cd a"}`))
	b := llmtest.Calls(llmtest.Call("terminal", `{"command":"cd b"}`))
	r := newRig(t, 0, repeat(4, a, b)...)
	r.log.userSays(t, "wander")
	if st := r.run(); st != StatusStuck {
		t.Fatalf("status %s", st)
	}
	if n := len(r.srv.Requests()); n != 6 {
		t.Fatalf("%d model calls, want 6", n)
	}
	if e := r.log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent); !strings.Contains(e.Detail, "alternated") {
		t.Fatalf("event %+v", e)
	}
}

func TestStuckDetectionCanBeTurnedOff(t *testing.T) {
	r := newRig(t, 0, append(repeat(5, llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`))), llmtest.Text("done"))...)
	r.cfg.DisableStuckDetection = true
	r.log.userSays(t, "list")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
}

func TestDetectStuckRules(t *testing.T) {
	mk := func(spec string) []*entry {
		// spec: a sequence of tokens: u (user message), m (agent message), A/B/C (an action
		// and its observation with that content), E (an action ls and a fixed error).
		l := &memLog{}
		for i, tok := range strings.Fields(spec) {
			var evs []event.Event
			id := func(s string) string { return s + "-" + string(rune('a'+i)) }
			switch tok {
			case "u":
				ev, _ := event.NewUserMessage(id("u"), t0, "hi", nil)
				evs = append(evs, ev)
			case "m":
				ev, _ := event.NewAgentMessage(id("m"), t0, "hello", "r")
				evs = append(evs, ev)
			default:
				call := id("call")
				act, _ := event.New(id("a"), t0, event.SourceAgent, &event.ActionEvent{
					ToolName: "terminal", ToolCallID: call, Action: []byte(`{"kind":"TerminalAction","command":"` + tok + `"}`),
					ToolCall: event.ToolCall{ID: call, Name: "terminal", Arguments: `{"command":"` + tok + `"}`}})
				evs = append(evs, act)
				if tok == "E" {
					res, _ := event.New(id("e"), t0, event.SourceAgent, &event.AgentErrorEvent{ToolName: "terminal", ToolCallID: call, Error: "boom"})
					evs = append(evs, res)
				} else {
					res, _ := event.New(id("o"), t0, event.SourceEnvironment, &event.ObservationEvent{ToolName: "terminal", ToolCallID: call})
					res.LLMText = "out " + tok
					evs = append(evs, res)
				}
			}
			l.Append(t.Context(), evs)
		}
		var entries []*entry
		for _, e := range l.all() {
			b, _ := event.Decode(e)
			entries = append(entries, &entry{ev: e, body: b})
		}
		return entries
	}
	for _, tc := range []struct {
		spec         string
		stuck, nudge bool
	}{
		{"u A A A", false, false},
		{"u A A A A", true, false},
		{"A A A A u A", false, false}, // only what follows the last user message counts
		{"u A B A B A", false, false},
		{"u A B A B A B", true, false},
		{"u A A B A A B", false, false},
		{"u E E", false, false},
		{"u E E E", false, true},
		{"u E E E E", true, false},
		{"u m m m", true, false},
		{"u m m", false, false},
		{"u C A A A A C", false, false},
	} {
		v := detectStuck(mk(tc.spec))
		if (v.reason != "") != tc.stuck || v.nudge != tc.nudge {
			t.Errorf("%q: %+v, want stuck %v nudge %v", tc.spec, v, tc.stuck, tc.nudge)
		}
	}
}

func TestStatusTransitions(t *testing.T) {
	all := []Status{"", StatusIdle, StatusRunning, StatusPaused, StatusWaitingForConfirmation, StatusFinished, StatusError, StatusStuck}
	allowed := map[[2]Status]bool{}
	for from, tos := range transitions {
		for to := range tos {
			allowed[[2]Status{from, to}] = true
		}
	}
	for _, from := range all {
		for _, to := range all {
			want := from == to || allowed[[2]Status{from, to}]
			if got := CanTransition(from, to); got != want {
				t.Errorf("%q -> %q: %v, want %v", from, to, got, want)
			}
		}
	}
	// What the loop and the runner rely on.
	for _, tc := range [][2]Status{
		{"", StatusRunning}, {StatusIdle, StatusRunning}, {StatusRunning, StatusFinished}, {StatusRunning, StatusStuck},
		{StatusRunning, StatusError}, {StatusRunning, StatusPaused}, {StatusPaused, StatusRunning},
		{StatusFinished, StatusRunning}, {StatusStuck, StatusRunning}, {StatusError, StatusRunning},
	} {
		if !CanTransition(tc[0], tc[1]) {
			t.Errorf("%q -> %q refused", tc[0], tc[1])
		}
	}
	for _, tc := range [][2]Status{{StatusFinished, StatusPaused}, {StatusError, StatusPaused}, {StatusIdle, StatusFinished}} {
		if CanTransition(tc[0], tc[1]) {
			t.Errorf("%q -> %q allowed", tc[0], tc[1])
		}
	}
	if got := (&TransitionError{From: StatusFinished, To: StatusPaused}).Error(); got != "the agent is finished and cannot become paused" {
		t.Errorf("message %q", got)
	}
	terminal := slices.DeleteFunc(slices.Clone(all), func(s Status) bool { return !s.Terminal() })
	if !slices.Equal(terminal, []Status{StatusFinished, StatusError, StatusStuck}) {
		t.Errorf("terminal statuses %v", terminal)
	}
}

// detectStuck feeds a whole log to a stuckWatch, as the loop does event by event, and
// returns its verdict.
func detectStuck(log []*entry) verdict {
	var w stuckWatch
	for _, e := range log {
		w.add(e)
	}
	return w.verdict()
}
