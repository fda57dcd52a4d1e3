package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// Commands always come back, a pause does not wait for the step in flight, and deleting a
// conversation stops its agent wherever it is.

// terminalWaits sets the terminal's waits of the server.
func terminalWaits(noChange, maxWait time.Duration) envOption {
	return func(c *config.Config) {
		c.TerminalNoChangeTimeout, c.TerminalMaxWait = noChange, maxWait
	}
}

// lastToolResult is the text of the last tool message of a request.
func lastToolResult(req llmtest.RecordedRequest) string {
	r := toolResults(req)
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// TestAgentRunsYes: a command that prints without end comes back at the configured ceiling
// with its output so far and a note that it runs on; the agent carries on and stops it.
func TestAgentRunsYes(t *testing.T) {
	e := newEnv(t, terminalWaits(time.Hour, 500*time.Millisecond))
	_, alice := e.newUser("alice")
	var srv *llmtest.Server
	// untilStopped waits for the interrupted command to end (a busy machine may reach the
	// ceiling first), then finishes.
	var untilStopped llmtest.Step
	untilStopped = llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		if strings.Contains(lastToolResult(req), "[Command finished with exit code 130]") {
			return llmtest.Calls(llmtest.Call("finish", `{"message":"stopped yes"}`))
		}
		srv.Push(untilStopped)
		return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": ""} })
	}}
	srv = e.scripted(alice,
		terminal(t, "yes"),
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if got := lastToolResult(req); !strings.Contains(got, "still running after 0.5 seconds: one call waits at most that long") {
				t.Errorf("the result of yes does not say it runs on: %.300s", got[max(0, len(got)-300):])
			}
			return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": "C-c", "is_input": true} })
		}},
		untilStopped,
	)
	c := e.startAgent(alice, map[string]any{"initial_message": message("say yes", true)})
	c.waitStatus("finished", "error", "stuck")
	if got := c.info().ExecutionStatus; got != "finished" {
		t.Fatalf("execution status %s: %v", got, labels(c.events()))
	}
	first := ""
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" && ev.ToolName == "terminal" {
			first = observationText(ev)
			break
		}
	}
	if !strings.HasPrefix(first, "y\ny\n") || len(first) > 40_000 {
		t.Fatalf("first observation (%d bytes): %.200s", len(first), first)
	}
}

// TestPauseDuringCommand: a pause during a command that does not end stops the command (C-c)
// and records it as an observation that says the pause interrupted it, with its output, not as
// an error. Run carries on, and the agent's next command runs at once: the terminal is free.
func TestPauseDuringCommand(t *testing.T) {
	// Waits far longer than the test, so that the call is in flight when the pause comes.
	e := newEnv(t, terminalWaits(time.Hour, time.Hour))
	_, alice := e.newUser("alice")
	const marker = "agentd-test-pause-during-command"
	e.scripted(alice,
		terminal(t, `echo waiting; sh -c 'until [ -e go ]; do sleep 0.01; done; echo released' `+marker),
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if got := lastToolResult(req); !strings.Contains(got, "Paused by the user: the command was interrupted (C-c)") ||
				!strings.Contains(got, "waiting") || !strings.Contains(got, "exit code 130") {
				t.Errorf("after the pause, the model read %q", got)
			}
			return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": "echo after the resume"} })
		}},
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if got := lastToolResult(req); !strings.Contains(got, "after the resume\n") || !strings.Contains(got, "exit code 0") {
				t.Errorf("the command after the resume: %q", got)
			}
			return llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`))
		}},
	)
	c := e.startAgent(alice, map[string]any{"initial_message": message("wait for it", true)})
	e.eventually("the command to run", func() bool { return len(processesMatching(t, marker)) > 0 })
	c.api("POST", "/pause", nil, http.StatusOK, nil)
	c.waitStatus("paused")
	if n := len(processesMatching(t, marker)); n != 0 {
		t.Fatalf("%d processes of the command run on after the pause", n)
	}
	evs := c.events()
	wantLabels(t, evs,
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "ObservationEvent:terminal", "PauseEvent", "execution_status=paused")
	for _, ev := range evs {
		if got := observationText(ev); ev.Kind == "ObservationEvent" && !strings.HasPrefix(got, "Paused by the user: the command was interrupted (C-c).") {
			t.Fatalf("the interrupted command's observation: %q", got)
		}
	}

	c.api("POST", "/run", nil, http.StatusOK, nil)
	c.waitStatus("finished")
}

// TestPauseDuringModelCall: a pause while the model has not answered reaches paused; the call
// leaves nothing in the log, and run makes it again.
func TestPauseDuringModelCall(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, silentModel(), llmtest.Text("Here now."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hello?", true)})
	e.eventually("the model call", func() bool { return len(srv.Requests()) == 1 })
	c.api("POST", "/pause", nil, http.StatusOK, nil)
	c.waitStatus("paused")
	wantLabels(t, c.events(),
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running", "PauseEvent", "execution_status=paused")
	c.api("POST", "/run", nil, http.StatusOK, nil)
	c.waitStatus("finished")
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}

// silentModel is a model step that never answers; it returns when the caller gives up.
func silentModel() llmtest.Step {
	return llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
}

// TestDeleteStopsTheAgent: deleting a conversation stops its agent whether it waits for the
// model or for a command; the delete returns once the agent has stopped.
func TestDeleteStopsTheAgent(t *testing.T) {
	const marker = "agentd-test-delete-during-command"
	tests := []struct {
		name string
		step llmtest.Step
		busy func(t *testing.T, srv *llmtest.Server) bool
	}{
		{"model call", silentModel(), func(t *testing.T, srv *llmtest.Server) bool { return len(srv.Requests()) == 1 }},
		{"command", terminal(t, `sh -c 'until false; do sleep 0.01; done' `+marker),
			func(t *testing.T, _ *llmtest.Server) bool { return len(processesMatching(t, marker)) > 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, terminalWaits(time.Hour, time.Hour))
			_, alice := e.newUser("alice")
			srv := e.scripted(alice, tt.step)
			c := e.startAgent(alice, map[string]any{"initial_message": message("go", true)})
			e.eventually("the step to be in flight", func() bool { return tt.busy(t, srv) })
			if !e.app.Conversations.AgentRunning(c.id) {
				t.Fatal("the agent is not running")
			}
			e.must("DELETE", "/api/conversations/"+c.id, alice, nil, http.StatusOK, nil)
			if e.app.Conversations.AgentRunning(c.id) {
				t.Fatal("the agent still runs after the delete")
			}
			e.eventually("the command to end", func() bool { return len(processesMatching(t, marker)) == 0 })
		})
	}
}

// TestInterrupt: the SDK's interrupt, at the agent-server base as RemoteConversation calls it,
// cuts off the model call in flight and pauses the agent, as a pause does; once the agent has
// finished it answers success and changes nothing.
func TestInterrupt(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, silentModel(), llmtest.Text("Here now."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hello?", true)})
	host, _, _ := strings.Cut(c.url, "/api/conversations/")
	interrupt := func() {
		t.Helper()
		if st, b := e.callAt("POST", host+"/api/conversations/"+dashed(c.id)+"/interrupt", http.Header{"X-Session-API-Key": {c.sessionKey}}, nil); st != http.StatusOK || !strings.Contains(string(b), `"success":true`) {
			t.Fatalf("interrupt: %d %s", st, b)
		}
	}
	e.eventually("the model call", func() bool { return len(srv.Requests()) == 1 })
	interrupt()
	c.waitStatus("paused")
	wantLabels(t, c.events(),
		"MessageEvent:user", "SystemPromptEvent", "execution_status=running", "PauseEvent", "execution_status=paused")

	c.api("POST", "/run", nil, http.StatusOK, nil)
	c.waitStatus("finished")
	n := len(c.events())
	interrupt()
	if got := c.info().ExecutionStatus; got != "finished" || len(c.events()) != n {
		t.Fatalf("an interrupt with nothing running left the agent %s with %d events, had %d", got, len(c.events()), n)
	}
	if st, b := e.callAt("POST", host+"/api/conversations/"+dashed(c.id)+"/interrupt", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("interrupt without a key: %d %s", st, b)
	}
}

// TestRunRightAfterFinish: a message and a run sent as soon as the agent finished are always
// answered. The loop that finished may still be ending (the run is then a 409 that makes it
// look again), or releasing the conversation's lease as it ends, which must not free the
// lease of a loop the run starts meanwhile.
func TestRunRightAfterFinish(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	const rounds = 25
	steps := []llmtest.Step{llmtest.Text("first")}
	for range rounds {
		steps = append(steps, llmtest.Text("again"))
	}
	srv := e.scripted(alice, steps...)
	c := e.startAgent(alice, map[string]any{"initial_message": message("start", true)})
	c.waitStatus("finished")
	for i := range rounds {
		c.api("POST", "/events", message("once more", false), http.StatusOK, nil)
		// 409 when the loop that finished has not ended yet: a run under way, which must
		// answer the message all the same.
		c.runAsSDK()
		c.waitStatus("finished")
		if n := len(srv.Requests()); n != i+2 {
			t.Fatalf("round %d: %d model calls, want %d", i, n, i+2)
		}
	}
}

// TestRunRightAfterReady: a message and a run sent as soon as a conversation is ready are
// answered, as OpenHands' SDK sends them after starting one: the loop that starts at ready
// with nothing to answer may be ending when the run comes, which then answers 409 (a run under
// way, which the SDK waits on) and must make that loop look again.
func TestRunRightAfterReady(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	const rounds = 8
	var steps []llmtest.Step
	for range rounds {
		steps = append(steps, llmtest.Text("answered"))
	}
	srv := e.scripted(alice, steps...)
	sandboxID := e.runningSandbox(alice)
	for i := range rounds {
		c := e.startAgent(alice, map[string]any{"sandbox_id": sandboxID})
		c.api("POST", "/events", message("hi", false), http.StatusOK, nil)
		c.runAsSDK()
		c.waitStatus("finished")
		if n := len(srv.Requests()); n != i+1 {
			t.Fatalf("round %d: %d model calls, want %d", i, n, i+1)
		}
	}
}
