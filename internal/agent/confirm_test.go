package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// setPolicy records the conversation's confirmation policy, as the conversation service does.
func (l *memLog) setPolicy(t *testing.T, p confirm.Policy) {
	t.Helper()
	ev, err := event.NewStateUpdate("policy-"+p.Kind, t0, event.StateConfirmationPolicy, p)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(context.Background(), []event.Event{ev})
}

// reject records the user's rejection of the pending actions, as the conversation service does.
func (l *memLog) reject(t *testing.T, reason string) {
	t.Helper()
	pending, err := PendingActions(l.all())
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) == 0 {
		t.Fatal("no pending action to reject")
	}
	n := 0
	evs, err := Rejections(pending, reason, func() string { n++; return "reject-" + string(rune('a'+n)) }, t0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := event.NewStateUpdate("idle-after-reject", t0, event.StateExecutionStatus, StatusIdle)
	l.Append(context.Background(), append(evs, st))
}

func (l *memLog) risks() []string {
	var out []string
	for _, b := range l.bodies(event.KindAction) {
		a := b.(*event.ActionEvent)
		out = append(out, a.ToolName+"="+a.SecurityRisk)
	}
	return out
}

func TestConfirmRiskyRunsLowAndWaitsOnHigh(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("terminal", `{"command":"ls","security_risk":"LOW"}`)),
			// The model calls it LOW; a recursive delete outside the workspace is HIGH anyway.
			llmtest.Calls(llmtest.Call("terminal", `{"command":"rm -rf /var/lib/data","security_risk":"LOW"}`)),
			llmtest.Calls(llmtest.Call("finish", `{"message":"Left the data alone."}`)),
		)
		r.log.setPolicy(t, confirm.Risky)
		r.log.userSays(t, "Clean up.")
		if st := r.run(); st != StatusWaitingForConfirmation {
			t.Fatalf("status %s, want waiting_for_confirmation", st)
		}
		r.wantKinds(`confirmation_policy={"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true}`, "MessageEvent:user", "SystemPromptEvent", "execution_status=running",
			"ActionEvent:terminal", "ObservationEvent:terminal",
			"ActionEvent:terminal", "execution_status=waiting_for_confirmation")
		if got := r.log.risks(); !slices.Equal(got, []string{"terminal=LOW", "terminal=HIGH"}) {
			t.Errorf("risks %v", got)
		}
		if len(r.tools.calls) != 1 {
			t.Fatalf("tool calls %v, want only ls", r.tools.calls)
		}

		// What waits is read from the log alone: after a restart too.
		pending, err := PendingActions(r.log.all())
		if err != nil || len(pending) != 1 || !strings.Contains(pending[0].ToolCall.Arguments, "rm -rf") {
			t.Fatalf("pending %+v, %v", pending, err)
		}
	})
}

func TestConfirmRejectWithReason(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("terminal", `{"command":"git push --force origin main","security_risk":"HIGH"}`)),
			llmtest.Calls(llmtest.Call("finish", `{"message":"Did not push."}`)),
		)
		r.log.setPolicy(t, confirm.Risky)
		r.log.userSays(t, "Push it.")
		if st := r.run(); st != StatusWaitingForConfirmation {
			t.Fatalf("status %s", st)
		}
		r.log.reject(t, "never force-push main")
		// Waiting's answer is recorded while no loop runs; the run that follows continues.
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s after the rejection", st)
		}
		if len(r.tools.calls) != 0 {
			t.Fatalf("a rejected action ran: %v", r.tools.calls)
		}
		reqs := r.srv.Requests()
		if got := toolTexts(reqs[1]); len(got) != 1 || got[0] != "Action rejected: never force-push main" {
			t.Fatalf("the model saw %q", got)
		}
		rej := r.log.bodies(event.KindUserReject)
		if len(rej) != 1 {
			t.Fatalf("%d rejections", len(rej))
		}
		o := rej[0].(*event.UserRejectObservation)
		act := r.log.bodies(event.KindAction)[0].(*event.ActionEvent)
		if o.ActionID != act.ID || o.ToolCallID != act.ToolCallID || o.Source != event.SourceUser || o.RejectionSource != "user" {
			t.Errorf("rejection %+v of action %s/%s", o, act.ID, act.ToolCallID)
		}
	})
}

func TestConfirmAcceptRunsThePendingAction(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(
			llmtest.Call("terminal", `{"command":"echo one","security_risk":"LOW"}`),
			llmtest.Call("terminal", `{"command":"rm -rf /workspace/project/build","security_risk":"HIGH"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"Cleaned."}`)),
	)
	r.log.setPolicy(t, confirm.Risky)
	r.log.userSays(t, "Clean the build.")
	if st := r.run(); st != StatusWaitingForConfirmation {
		t.Fatalf("status %s", st)
	}
	if len(r.tools.calls) != 0 {
		t.Fatalf("the actions of a response wait together; ran %v", r.tools.calls)
	}
	// Running the agent while actions wait is the user's confirmation.
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s after accepting", st)
	}
	if len(r.tools.calls) != 2 || !strings.Contains(r.tools.calls[1], "rm -rf") {
		t.Fatalf("tool calls %v", r.tools.calls)
	}
	r.wantKinds(`confirmation_policy={"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true}`, "MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "ActionEvent:terminal", "execution_status=waiting_for_confirmation",
		"execution_status=running", "ObservationEvent:terminal", "ObservationEvent:terminal",
		"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
}

func TestAlwaysConfirmStopsOnEveryCall(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("grep", `{"pattern":"TODO"}`)),
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo hi","security_risk":"LOW"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"Done."}`)),
	)
	r.log.setPolicy(t, confirm.Always)
	r.log.userSays(t, "Look around.")
	for i := range 2 {
		if st := r.run(); st != StatusWaitingForConfirmation {
			t.Fatalf("call %d: status %s", i, st)
		}
		if len(r.tools.calls) != i {
			t.Fatalf("call %d: tool calls %v", i, r.tools.calls)
		}
	}
	// The finish needs no confirmation.
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	if got := r.log.risks(); !slices.Equal(got, []string{"grep=LOW", "terminal=LOW", "finish=LOW"}) {
		t.Errorf("risks %v", got)
	}
}

func TestMessageWhileWaitingRejects(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("file_editor", `{"command":"create","path":"/etc/cron.d/job","file_text":"* * * * * x\n"}`)),
		llmtest.Text("Understood, no cron job."),
	)
	r.log.setPolicy(t, confirm.Risky)
	r.log.userSays(t, "Schedule it.")
	if st := r.run(); st != StatusWaitingForConfirmation {
		t.Fatalf("status %s", st)
	}
	if got := r.log.risks(); !slices.Equal(got, []string{"file_editor=HIGH"}) {
		t.Errorf("risks %v (an unrated write to a system path is HIGH)", got)
	}
	r.log.userSays(t, "No, use a systemd timer instead.")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	if len(r.tools.calls) != 0 {
		t.Fatalf("ran %v", r.tools.calls)
	}
	req := r.srv.Requests()[1]
	if got := toolTexts(req); len(got) != 1 || got[0] != "Action rejected: No, use a systemd timer instead." {
		t.Fatalf("tool results %q", got)
	}
	if last := req.Last(); last.Role != llm.RoleUser || last.Text() != "No, use a systemd timer instead." {
		t.Errorf("last message %+v", last)
	}
}

func TestToolSchemasAskForARisk(t *testing.T) {
	specs := toolset{}.specs()
	for _, s := range specs {
		var params struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(s.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		risk, ok := params.Properties["security_risk"]
		readOnly := s.Name == "glob" || s.Name == "grep" || s.Name == "think" || s.Name == "finish"
		if ok == readOnly {
			t.Errorf("%s: security_risk offered %v", s.Name, ok)
		}
		if ok && !slices.Equal(risk.Enum, []string{"LOW", "MEDIUM", "HIGH"}) {
			t.Errorf("%s: security_risk enum %v", s.Name, risk.Enum)
		}
	}
}

func TestUnratedCallIsUnknownAndNeverPolicyRunsIt(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"make","security_risk":"SEVERE"}`)),
		llmtest.Text("Built."),
	)
	r.log.userSays(t, "Build.")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	if got := r.log.risks(); !slices.Equal(got, []string{"terminal=UNKNOWN"}) {
		t.Errorf("risks %v", got)
	}
}
