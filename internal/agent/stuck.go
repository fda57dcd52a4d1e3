package agent

import (
	"bytes"
	"encoding/json"

	"github.com/agentd/agentd/internal/event"
)

// Stuck detection looks at the last events after the user's last message, as OpenHands'
// StuckDetector does, with its thresholds.
const (
	stuckWindow            = 20
	stuckActionObservation = 4 // the same action with the same observation
	stuckActionError       = 3 // the same action failing the same way: a nudge, then stuck
	stuckMonologue         = 3 // agent messages with no user message between
	stuckAlternation       = 6 // action-result pairs alternating A, B, A, B, A, B
)

// verdict is what the detector found: nothing, a reason to stop, or a nudge to send.
type verdict struct {
	reason string
	nudge  bool
}

// pair is one action with its result, compared without ids.
type pair struct {
	action string
	result string
	error  bool
}

// stuckWatch follows the log for the detector: the last stuckWindow events that take part in
// the conversation since the user's last message, and whether the agent was nudged since.
type stuckWatch struct {
	window []watched
	nudged bool
}

// watched is an event of the window, with the form of its action the detector compares
// (actions only): worked out once, as the event joins the window, not at every verdict.
type watched struct {
	e      *entry
	action string
}

// add brings the watch up to e, the next event of the log.
func (w *stuckWatch) add(e *entry) {
	switch b := e.body.(type) {
	case *event.MessageEvent:
		if b.Source == event.SourceUser {
			clear(w.window)
			w.window, w.nudged = w.window[:0], false
			return
		}
		if b.Source == event.SourceEnvironment && len(b.Texts()) > 0 && b.Texts()[0] == nudgeRepeatedError {
			w.nudged = true
			return
		}
	case *event.ObservationEvent, *event.AgentErrorEvent, *event.UserRejectObservation:
	case *event.ActionEvent:
		w.push(watched{e: e, action: b.ToolName + ":" + canonicalAction(b)})
		return
	default:
		return
	}
	w.push(watched{e: e})
}

// push adds one event to the window, dropping its oldest once full.
func (w *stuckWatch) push(x watched) {
	if len(w.window) < stuckWindow {
		w.window = append(w.window, x)
		return
	}
	copy(w.window, w.window[1:])
	w.window[len(w.window)-1] = x
}

// verdict says whether the agent is going round in circles.
func (w *stuckWatch) verdict() verdict {
	window, nudged := w.window, w.nudged
	if n := trailingAgentMessages(window); n >= stuckMonologue {
		return verdict{reason: "The agent wrote several messages in a row without any reply from the user."}
	}
	pairs := pairs(window)
	n := len(pairs)
	if n >= stuckActionObservation && allSame(pairs[n-stuckActionObservation:]) && !pairs[n-1].error {
		return verdict{reason: "The agent repeated the same action with the same result four times in a row."}
	}
	if n >= stuckActionError && allSame(pairs[n-stuckActionError:]) && pairs[n-1].error {
		if n > stuckActionError && allSame(pairs[n-stuckActionError-1:]) {
			return verdict{reason: "The agent kept repeating the same failing action after being told to change its approach."}
		}
		if !nudged {
			return verdict{nudge: true}
		}
	}
	if n >= stuckAlternation {
		last := pairs[n-stuckAlternation:]
		alternating := last[0] != last[1]
		for i := 2; i < len(last) && alternating; i++ {
			alternating = last[i] == last[i-2]
		}
		if alternating {
			return verdict{reason: "The agent alternated between the same two actions and results over and over."}
		}
	}
	return verdict{}
}

func trailingAgentMessages(window []watched) int {
	n := 0
	for i := len(window) - 1; i >= 0; i-- {
		m, ok := window[i].e.body.(*event.MessageEvent)
		if !ok || m.Source != event.SourceAgent {
			break
		}
		n++
	}
	return n
}

// pairs matches the window's actions with their results, in the order of the actions; an
// action without a result in the window is left out.
func pairs(window []watched) []pair {
	results := map[string]pair{}
	for _, w := range window {
		switch b := w.e.body.(type) {
		case *event.ObservationEvent:
			results[b.ToolCallID] = pair{result: "observation:" + w.e.ev.LLMText}
		case *event.AgentErrorEvent:
			results[b.ToolCallID] = pair{result: "error:" + b.Error, error: true}
		case *event.UserRejectObservation:
			results[b.ToolCallID] = pair{result: "rejected:" + b.RejectionReason}
		}
	}
	var out []pair
	for _, w := range window {
		a, ok := w.e.body.(*event.ActionEvent)
		if !ok {
			continue
		}
		r, ok := results[a.ToolCallID]
		if !ok {
			continue
		}
		r.action = w.action
		out = append(out, r)
	}
	return out
}

// canonicalAction is the action's content without ids: the validated action object, or the
// raw arguments of an invalid call.
func canonicalAction(a *event.ActionEvent) string {
	raw := []byte(a.Action)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte(a.ToolCall.Arguments)
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "summary")
	}
	b, _ := json.Marshal(v) // map keys come out sorted
	return string(b)
}

func allSame(ps []pair) bool {
	for _, p := range ps[1:] {
		if p != ps[0] {
			return false
		}
	}
	return true
}
