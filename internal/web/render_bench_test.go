package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
)

// BenchmarkRenderEvents renders a log of 1,000 events (terminal calls with their thoughts and
// outputs) as a conversation's page does.
func BenchmarkRenderEvents(b *testing.B) {
	a, err := New(Deps{})
	if err != nil {
		b.Fatal(err)
	}
	var evs []event.Event
	for i := range 500 {
		cmd := fmt.Sprintf("grep -rn 'func handler%d' ./internal", i)
		act, _ := event.New(fmt.Sprintf("a%d", i), time.Now(), event.SourceAgent, &event.ActionEvent{
			Thought: []event.TextPart{event.Text("Looking for the handler before changing it.")},
			Action:  json.RawMessage(fmt.Sprintf(`{"kind":"TerminalAction","command":%q}`, cmd)), ToolName: "terminal", ToolCallID: fmt.Sprint(i)})
		out := strings.Repeat(fmt.Sprintf("internal/server/handler%d.go:42:func handler%d(w http.ResponseWriter) {\n", i, i), 4)
		obs, _ := event.New(fmt.Sprintf("o%d", i), time.Now(), event.SourceEnvironment, &event.ObservationEvent{
			Observation: json.RawMessage(fmt.Sprintf(`{"kind":"TerminalObservation","exit_code":0,"content":[{"type":"text","text":%q}]}`, out)),
			ActionID:    act.ID, ToolName: "terminal", ToolCallID: fmt.Sprint(i)})
		evs = append(evs, act, obs)
	}
	b.ResetTimer()
	for b.Loop() {
		var sb strings.Builder
		for _, v := range viewEvents(evs) {
			if err := a.frags.ExecuteTemplate(&sb, "event", v); err != nil {
				b.Fatal(err)
			}
		}
	}
}
