package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// runPausable runs the agent until pause, called once ready reports true, cancels its
// context with the cause ErrPaused. It returns the run's status.
func (r *rig) runPausable(ready func() bool) Status {
	r.t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type result struct {
		st  Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log}).Run(ctx)
		done <- result{st, err}
	}()
	waitFor(r.t, "the step to be in flight", ready)
	cancel(ErrPaused)
	select {
	case res := <-done:
		if res.err != nil {
			r.t.Fatalf("paused run: %v", res.err)
		}
		return res.st
	case <-time.After(30 * time.Second):
		r.t.Fatal("the run did not end within 30s of the pause")
		return ""
	}
}

// TestPauseInterruptsToolCall: a pause does not wait for the tool call in flight: its command
// is stopped and reported as interrupted by the pause, the call of the same response not yet
// started is answered as not run, both as observations (no error), and the next run's prompt
// carries those answers.
func TestPauseInterruptsToolCall(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"sleep 100"}`), llmtest.Call("terminal", `{"command":"echo next"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	r.log.userSays(t, "go")
	r.tools.block = make(chan struct{}) // the command never ends
	st := r.runPausable(func() bool { return len(r.log.bodies(event.KindAction)) == 2 })
	if st != StatusPaused {
		t.Fatalf("status %s", st)
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "ActionEvent:terminal", "ObservationEvent:terminal", "ObservationEvent:terminal",
		"PauseEvent", "execution_status=paused")
	obs := r.log.bodies(event.KindObservation)
	var first struct {
		Command string `json:"command"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(obs[0].(*event.ObservationEvent).Observation, &first); err != nil {
		t.Fatal(err)
	}
	if first.Command != "sleep 100" || first.ExitCode != 130 || len(first.Content) != 2 || first.Content[0].Text != pauseStoppedCommand+"\n\n" || first.Content[1].Text != "^C" {
		t.Fatalf("the interrupted command's observation: %+v", first)
	}

	r.tools.block = nil
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status after resume %s", st)
	}
	want := []string{pauseStoppedCommand + "\n\n^C\n[Command finished with exit code 130]", pauseNotStarted}
	if got := toolTexts(r.srv.Requests()[1]); !slices.Equal(got, want) {
		t.Fatalf("tool results after the pause %q", got)
	}
}

// TestPauseInterruptsModelCall: a pause does not wait for the model either; the call in
// flight leaves nothing in the log, and the next run makes it again.
func TestPauseInterruptsModelCall(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Step{HTTP: func(w http.ResponseWriter, req *http.Request) {
			<-req.Context().Done() // a model that never answers
		}},
		llmtest.Text("hello"),
	)
	r.log.userSays(t, "hi")
	st := r.runPausable(func() bool { return len(r.srv.Requests()) == 1 })
	if st != StatusPaused {
		t.Fatalf("status %s", st)
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"PauseEvent", "execution_status=paused")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status after resume %s", st)
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"PauseEvent", "execution_status=paused",
		"execution_status=running", "MessageEvent:agent", "execution_status=finished")
}

// TestShutdownIsNoPause: a context cancelled without the pause's cause is a shutdown: the run
// ends with its status as recorded and records nothing more.
func TestShutdownIsNoPause(t *testing.T) {
	r := newRig(t, 0, llmtest.Calls(llmtest.Call("terminal", `{"command":"sleep 100"}`)))
	r.log.userSays(t, "go")
	r.tools.block = make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Status, 1)
	go func() {
		st, _ := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log}).Run(ctx)
		done <- st
	}()
	waitFor(t, "the action", func() bool { return len(r.log.bodies(event.KindAction)) == 1 })
	cancel(context.Canceled)
	select {
	case st := <-done:
		if st != StatusRunning {
			t.Fatalf("status after shutdown %s", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end within 30s of the cancel")
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running", "ActionEvent:terminal")
}
