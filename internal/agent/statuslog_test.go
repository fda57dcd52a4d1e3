package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestStatusUpdatesDoNotChangeTheAgent: the conversation service records the status of the
// conversation's start and sandbox in its log (state updates the agent does not know). A run
// whose log gets such updates between its events makes the same model calls, records the
// same events and ends the same as one without them, stuck detection included.
func TestStatusUpdatesDoNotChangeTheAgent(t *testing.T) {
	scripts := map[string][]llmtest.Step{
		"finishes": {
			llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`)),
			llmtest.Calls(llmtest.Call("terminal", `{"command":"make"}`)),
			llmtest.Text("Built."),
		},
		"gets stuck": repeat(5, llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`))),
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			plain := newRig(t, 0, script...)
			plain.log.userSays(t, "build it")
			plainStatus := plain.run()

			noisy := newRig(t, 0, script...)
			noisy.log.userSays(t, "build it")
			n := 0
			noisy.log.onAppend = func(evs []event.Event) {
				if evs[len(evs)-1].Kind != event.KindObservation {
					return
				}
				n++
				var status []event.Event
				for _, u := range []struct {
					key   string
					value any
				}{
					{event.StateStartTask, event.StartTaskState{ID: "task", Status: "READY"}},
					{event.StateSandboxStatus, "PAUSED"},
					{event.StateConversationStatus, "STOPPED"},
					{event.StateSandboxStatus, "RUNNING"},
					{event.StateConversationStatus, "RUNNING"},
				} {
					ev, err := event.NewStateUpdate(fmt.Sprintf("status-%d-%s", n, u.key), time.Now(), u.key, u.value)
					if err != nil {
						t.Error(err)
						return
					}
					status = append(status, ev)
				}
				noisy.log.Append(context.Background(), status)
			}
			if st := noisy.run(); st != plainStatus {
				t.Fatalf("with status updates the run ended %s, without %s", st, plainStatus)
			}
			if n == 0 {
				t.Fatal("bad test: no status update was recorded")
			}
			if got, want := agentKinds(noisy.log), agentKinds(plain.log); !slices.Equal(got, want) {
				t.Fatalf("with status updates the agent recorded\n  %v\nwithout\n  %v", got, want)
			}
			got, want := noisy.srv.Requests(), plain.srv.Requests()
			if len(got) != len(want) {
				t.Fatalf("%d model calls with status updates, %d without", len(got), len(want))
			}
			for i := range want {
				if g, w := messageShapes(got[i].Messages), messageShapes(want[i].Messages); !slices.Equal(g, w) {
					t.Fatalf("model call %d with status updates\n  %q\nwithout\n  %q", i, g, w)
				}
			}
		})
	}
}

// agentKinds is the log's story without the service's status updates.
func agentKinds(l *memLog) []string {
	status := map[string]bool{event.StateStartTask: true, event.StateSandboxStatus: true, event.StateConversationStatus: true}
	var out []string
	for _, k := range l.kinds() {
		if key, _, _ := strings.Cut(k, "="); !status[key] {
			out = append(out, k)
		}
	}
	return out
}

// messageShapes is each message's role, tool calls and text.
func messageShapes(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role) + ":" + m.Text()
		for _, c := range m.ToolCalls {
			s += " call " + c.ID + " " + c.Name + " " + c.Arguments
		}
		out = append(out, s+" "+m.ToolCallID)
	}
	return out
}
