package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/tool"
)

const program = "/workspace/project/hello.py"

func TestLoopWritesRunsFixesAndFinishes(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Step{Reply: &llmtest.Reply{Text: "I will write the program first.", ToolCalls: []llm.ToolCall{
				llmtest.Call("file_editor", `{"command":"create","path":"`+program+`","file_text":"print('helo')\n","summary":"write hello.py"}`)}}},
			llmtest.Calls(llmtest.Call("terminal", `{"command":"python3 hello.py"}`)),
			llmtest.Calls(llmtest.Call("file_editor", `{"command":"str_replace","path":"`+program+`","old_str":"helo","new_str":"hello"}`)),
			llmtest.Calls(llmtest.Call("terminal", `{"command":"python3 hello.py"}`)),
			llmtest.Calls(llmtest.Call("finish", `{"message":"hello.py prints hello now."}`)),
		)
		runs := 0
		r.tools.terminal = func(cmd string) (string, int) {
			runs++
			if strings.Contains(r.tools.files[program], "hello") {
				return "hello", 0
			}
			return "helo", 0
		}
		r.cfg.Instructions = "Answer in English."
		r.cfg.Repository = Repository{Name: "octo/widgets", Dir: "/workspace/project/widgets", Branch: "dev", Request: "merge request"}
		r.cfg.Secrets = []SecretInfo{{Name: "DEPLOY_TOKEN", Description: "for the\n staging   API"}, {Name: "NO_DESCRIPTION"}}
		r.log.userSays(t, "Write hello.py and make it print hello.", "data:image/png;base64,iVBORw0KGgo=")
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s", st)
		}
		r.wantKinds(
			"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
			"ActionEvent:file_editor", "ObservationEvent:file_editor",
			"ActionEvent:terminal", "ObservationEvent:terminal",
			"ActionEvent:file_editor", "ObservationEvent:file_editor",
			"ActionEvent:terminal", "ObservationEvent:terminal",
			"ActionEvent:finish", "ObservationEvent:finish",
			"execution_status=finished",
		)
		if r.tools.files[program] != "print('hello')\n" || runs != 2 {
			t.Fatalf("file %q after %d runs", r.tools.files[program], runs)
		}
		reqs := r.srv.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d model calls, want 5", len(reqs))
		}
		first := reqs[0]
		for _, want := range []string{"/workspace/project", "<CONVERSATION_INSTRUCTIONS>", "Answer in English.",
			"The repository octo/widgets is cloned at /workspace/project/widgets, with the branch dev checked out.", "open the merge request",
			"<CUSTOM_SECRETS>", "* DEPLOY_TOKEN: for the staging API\n* NO_DESCRIPTION\n</CUSTOM_SECRETS>"} {
			if !strings.Contains(first.System, want) {
				t.Errorf("system prompt lacks %q", want)
			}
		}
		if got := toolNames(first.Tools); !slices.Equal(got, []string{"terminal", "file_editor", "glob", "grep", "task_tracker", "think", "finish"}) {
			t.Errorf("tools %v", got)
		}
		var params map[string]any
		json.Unmarshal(first.Tools[0].Parameters, &params)
		if props, _ := params["properties"].(map[string]any); props["command"] == nil || props["summary"] == nil {
			t.Errorf("terminal parameters %s", first.Tools[0].Parameters)
		}
		if len(first.Messages) != 1 || first.Messages[0].Role != llm.RoleUser {
			t.Fatalf("first request messages %+v", first.Messages)
		}
		parts := first.Messages[0].Parts
		if len(parts) != 2 || parts[0].Text != "Write hello.py and make it print hello." || parts[1].ImageURL != "data:image/png;base64,iVBORw0KGgo=" {
			t.Errorf("user message parts %+v", parts)
		}
		// The last request holds the whole story: every call answered in order.
		last := reqs[4]
		if got := toolTexts(last); len(got) != 4 || got[0] != "File created successfully at: "+program ||
			got[1] != "helo\n[Command finished with exit code 0]" || got[3] != "hello\n[Command finished with exit code 0]" {
			t.Errorf("tool results sent %q", got)
		}
		if m := last.Messages[1]; m.Role != llm.RoleAssistant || m.Text() != "I will write the program first." || len(m.ToolCalls) != 1 {
			t.Errorf("first assistant turn %+v", m)
		}
		acts := r.log.bodies(event.KindAction)
		a0 := acts[0].(*event.ActionEvent)
		if a0.Summary == nil || *a0.Summary != "write hello.py" || len(a0.Thought) != 1 || a0.SecurityRisk != "UNKNOWN" ||
			!strings.HasPrefix(string(a0.Action), `{"kind":"FileEditorAction","command":"create"`) {
			t.Errorf("first action %+v %s", a0, a0.Action)
		}
		obs := r.log.bodies(event.KindObservation)[1].(*event.ObservationEvent)
		if obs.ActionID != acts[1].(*event.ActionEvent).ID || obs.ToolCallID != acts[1].(*event.ActionEvent).ToolCallID {
			t.Errorf("observation does not point at its action: %+v", obs)
		}
	})
}

func TestTextAnswerWaitsForTheUser(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p, llmtest.Text("Hello! What should I work on?"), llmtest.Text("Done."))
		r.log.userSays(t, "hi")
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s", st)
		}
		// Running again without a new message does nothing.
		if st := r.run(); st != StatusFinished || len(r.srv.Requests()) != 1 {
			t.Fatalf("second run: %s after %d calls", st, len(r.srv.Requests()))
		}
		r.log.userSays(t, "add a README")
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s", st)
		}
		r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running", "MessageEvent:agent",
			"execution_status=finished", "MessageEvent:user", "execution_status=running", "MessageEvent:agent", "execution_status=finished")
		msgs := r.srv.Requests()[1].Messages
		if len(msgs) != 3 || msgs[1].Role != llm.RoleAssistant || msgs[1].Text() != "Hello! What should I work on?" || msgs[2].Text() != "add a README" {
			t.Fatalf("second request %+v", msgs)
		}
	})
}

func TestMalformedCallsAreShownToTheModel(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("terminal", `{"cmd":"ls"}`), llmtest.Call("browser", `{"url":"x"}`), llmtest.Call("think", `{"thought":"hmm"}`)),
			llmtest.Calls(llmtest.Call("finish", `{"message":"ok"}`)),
		)
		r.log.userSays(t, "go")
		if st := r.run(); st != StatusFinished {
			t.Fatalf("status %s", st)
		}
		r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
			"ActionEvent:terminal", "ActionEvent:browser", "ActionEvent:think", "AgentErrorEvent", "AgentErrorEvent",
			"ObservationEvent:think", "ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
		bad := r.log.bodies(event.KindAction)[0].(*event.ActionEvent)
		if string(bad.Action) != "null" {
			t.Errorf("invalid call recorded with action %s", bad.Action)
		}
		got := toolTexts(r.srv.Requests()[1])
		if len(got) != 3 || !strings.Contains(got[0], "Arguments provided: [cmd]") || !strings.Contains(got[1], `Tool "browser" does not exist`) ||
			got[2] != "Your thought has been recorded." {
			t.Fatalf("tool results %q", got)
		}
		if len(r.tools.calls) != 0 {
			t.Fatalf("invalid calls reached the sandbox: %v", r.tools.calls)
		}
	})
}

func TestMaxIterations(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("think", `{"thought":"one"}`)),
		llmtest.Calls(llmtest.Call("think", `{"thought":"two"}`)),
		llmtest.Calls(llmtest.Call("think", `{"thought":"three"}`)),
	)
	r.cfg.MaxIterations = 3
	r.log.userSays(t, "think hard")
	if st := r.run(); st != StatusError {
		t.Fatalf("status %s", st)
	}
	kinds := r.log.kinds()
	if got := kinds[len(kinds)-2:]; !slices.Equal(got, []string{"ConversationErrorEvent:MaxIterationsReached", "execution_status=error"}) {
		t.Fatalf("log ends %v", got)
	}
	// A new message starts a new run with a fresh count.
	r.srv.Push(llmtest.Text("I am done thinking."))
	r.log.userSays(t, "go on")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p, llmtest.RateLimited("0"), llmtest.Text("hello"))
		r.log.userSays(t, "hi")
		if st := r.run(); st != StatusFinished || len(r.srv.Requests()) != 2 {
			t.Fatalf("status %s after %d calls", st, len(r.srv.Requests()))
		}
	})
}

func TestRetriesRunOut(t *testing.T) {
	r := newRig(t, 0, llmtest.RateLimited(""), llmtest.RateLimited(""), llmtest.RateLimited(""))
	r.log.userSays(t, "hi")
	if st := r.run(); st != StatusError {
		t.Fatalf("status %s", st)
	}
	e := r.log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent)
	if e.Code != "LLMRateLimitError" || !strings.Contains(e.Detail, "gave up after 3 attempts") {
		t.Fatalf("error event %+v", e)
	}
	if strings.Contains(e.Detail, llmtest.APIKey) {
		t.Fatal("the API key reached the event")
	}
}

func TestAuthErrorIsNotRetried(t *testing.T) {
	r := newRig(t, 1, llmtest.Fail(http.StatusUnauthorized, "invalid x-api-key"))
	r.log.userSays(t, "hi")
	if st := r.run(); st != StatusError || len(r.srv.Requests()) != 1 {
		t.Fatalf("status %s after %d calls", st, len(r.srv.Requests()))
	}
	if e := r.log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent); e.Code != "LLMAuthenticationError" {
		t.Fatalf("error event %+v", e)
	}
}

func TestUserMessageDuringAStep(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("terminal", `{"command":"make"}`)),
			llmtest.Calls(llmtest.Call("finish", `{"message":"built"}`)),
		)
		r.tools.terminal = func(cmd string) (string, int) {
			// The user writes while the command runs: between the action and its result.
			r.log.userSays(t, "also run the tests")
			return "built", 0
		}
		r.log.userSays(t, "build it")
		r.run()
		r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
			"ActionEvent:terminal", "MessageEvent:user", "ObservationEvent:terminal",
			"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
		msgs := r.srv.Requests()[1].Messages
		roles := []llm.Role{}
		for _, m := range msgs {
			roles = append(roles, m.Role)
		}
		// The tool result follows its call; the user's words come after it.
		if !slices.Equal(roles, []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleTool, llm.RoleUser}) || msgs[3].Text() != "also run the tests" {
			t.Fatalf("messages %v: %+v", roles, msgs)
		}
	})
}

func TestPauseBetweenSteps(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("think", `{"thought":"first"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	steps := 0
	r.log.onAppend = func(evs []event.Event) {
		for _, e := range evs {
			if e.Kind == event.KindObservation {
				steps++
			}
		}
	}
	r.pause = func() bool { return steps == 1 }
	r.log.userSays(t, "go")
	if st := r.run(); st != StatusPaused {
		t.Fatalf("status %s", st)
	}
	r.pause = nil
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status after resume %s", st)
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:think", "ObservationEvent:think", "PauseEvent", "execution_status=paused",
		"execution_status=running", "ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
}

func TestRestartAnswersInterruptedCalls(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"sleep 100"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	r.log.userSays(t, "go")
	r.tools.block = make(chan struct{})
	ctx, cancel := contextWithCancel()
	done := make(chan Status)
	go func() {
		st, _ := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log}).Run(ctx)
		done <- st
	}()
	waitFor(t, "the action", func() bool { return len(r.log.bodies(event.KindAction)) == 1 })
	cancel() // the server stops mid-command
	select {
	case st := <-done:
		if st != StatusRunning {
			t.Fatalf("status after shutdown %s, want running", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end within 30s of the cancel")
	}
	r.tools.block = nil
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	errs := r.log.bodies(event.KindAgentError)
	if len(errs) != 1 || !strings.Contains(errs[0].(*event.AgentErrorEvent).Error, "restart") {
		t.Fatalf("agent errors %+v", errs)
	}
	if got := toolTexts(r.srv.Requests()[1]); len(got) != 1 || got[0] != restartInterrupted {
		t.Fatalf("tool results %q", got)
	}
	if n := len(r.log.bodies(event.KindSystemPrompt)); n != 1 {
		t.Fatalf("%d system prompts", n)
	}
}

func TestTaskTrackerKeepsItsListInTheLog(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("task_tracker", `{"command":"plan","task_list":[{"title":"write","status":"in_progress"},{"title":"test"}]}`)),
		llmtest.Calls(llmtest.Call("task_tracker", `{"command":"view"}`)),
		llmtest.Text("planned"),
	)
	r.log.userSays(t, "plan")
	r.run()
	got := toolTexts(r.srv.Requests()[2])
	if len(got) != 2 || !strings.Contains(got[1], "1. [~] write") || !strings.Contains(got[1], "2. [ ] test") {
		t.Fatalf("task tracker results %q", got)
	}
	obs := r.log.bodies(event.KindObservation)[1].(*event.ObservationEvent)
	var o tool.TaskTrackerObservation
	json.Unmarshal(obs.Observation, &o)
	if o.Kind != tool.KindTaskTracker || len(o.TaskList) != 2 {
		t.Fatalf("observation %s", obs.Observation)
	}
}

func TestToolFailureIsAnAgentError(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("glob", `{"pattern":"*.go"}`)), // the fake has no glob
		llmtest.Text("no luck"),
	)
	r.log.userSays(t, "find go files")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	e := r.log.bodies(event.KindAgentError)[0].(*event.AgentErrorEvent)
	if e.ToolName != "glob" || !strings.Contains(e.Error, "no tool glob") {
		t.Fatalf("agent error %+v", e)
	}
}

// TestInstantCallsAreRecordedWithTheirActions: the calls the loop answers itself without
// effects (think, finish) are recorded in the same append as the response's actions while
// no other call comes before them; a think after a terminal call waits for the terminal's
// result, and the log reads as it always did.
func TestInstantCallsAreRecordedWithTheirActions(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("think", `{"thought":"first"}`), llmtest.Call("think", `{"thought":"second"}`),
			llmtest.Call("terminal", `{"command":"ls"}`), llmtest.Call("think", `{"thought":"third"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	var appends [][]string
	r.log.onAppend = func(evs []event.Event) {
		var kinds []string
		for _, e := range evs {
			body, _ := event.Decode(e)
			switch b := body.(type) {
			case *event.ActionEvent:
				kinds = append(kinds, "action:"+b.ToolName)
			case *event.ObservationEvent:
				kinds = append(kinds, "observation:"+b.ToolName)
			}
		}
		if len(kinds) > 0 {
			appends = append(appends, kinds)
		}
	}
	r.log.userSays(t, "Think it over, then list the files.")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s, want finished", st)
	}
	want := [][]string{
		{"action:think", "action:think", "action:terminal", "action:think", "observation:think", "observation:think"},
		{"observation:terminal"},
		{"observation:think"},
		{"action:finish", "observation:finish"},
	}
	if fmt.Sprint(appends) != fmt.Sprint(want) {
		t.Fatalf("appends %v\nwant %v", appends, want)
	}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:think", "ActionEvent:think", "ActionEvent:terminal", "ActionEvent:think",
		"ObservationEvent:think", "ObservationEvent:think", "ObservationEvent:terminal", "ObservationEvent:think",
		"ActionEvent:finish", "ObservationEvent:finish", "execution_status=finished")
}

// TestStepsReadTheLogBackOnlyAfterOthersAppended: an append of the loop's own that directly
// follows what it read needs no read of the log (the events as stored are all that is new),
// and the loop does not read it again at the top of the next iteration; the append after a
// message the user sent during a tool call reads the log back, and the message reaches the
// next prompt.
func TestStepsReadTheLogBackOnlyAfterOthersAppended(t *testing.T) {
	r := newRig(t, 0,
		llmtest.Calls(llmtest.Call("think", `{"thought":"one"}`)),
		llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`)),
		llmtest.Calls(llmtest.Call("think", `{"thought":"two"}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	r.tools.terminal = func(cmd string) (string, int) {
		r.log.userSays(t, "and then stop")
		return "ran " + cmd, 0
	}
	r.log.userSays(t, "go")
	a := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log})
	if st, err := a.Run(t.Context()); err != nil || st != StatusFinished {
		t.Fatalf("status %s (%v), want finished", st, err)
	}
	r.log.mu.Lock()
	loads, appends := r.log.loads, r.log.appends-2 // less the user's two messages
	r.log.mu.Unlock()
	// One read to start (the loop's first step reads nothing more; the system prompt is
	// stored with the running status); then one, after the terminal's result.
	if loads != 2 || appends < 7 {
		t.Errorf("%d reads of the log for %d appends, want 2: one to start, one after the user's message", loads, appends)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 4 || reqs[2].Last().Text() != "and then stop" {
		t.Fatalf("%d requests; the third's last message %+v, want the user's message sent during the terminal call", len(reqs), reqs[min(2, len(reqs)-1)].Last())
	}
	// What the loop took from its appends is what a read of the whole log gives.
	fresh := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log})
	if err := fresh.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	viewIDs := func(a *Agent) (ids []string) {
		for _, it := range a.view.items {
			ids = append(ids, it.id)
		}
		return ids
	}
	if got, want := viewIDs(a), viewIDs(fresh); !slices.Equal(got, want) || a.lastSeq != fresh.lastSeq || a.status != fresh.status {
		t.Fatalf("the loop's view %v (last seq %d, %s), a read of the log %v (%d, %s)", got, a.lastSeq, a.status, want, fresh.lastSeq, fresh.status)
	}
}

// TestLoopHoldsWhatTheModelSees: a long run holds, of its log, only the events its model
// still sees (those since the last condensation) and the few the stuck detector looks at, not
// its whole history, and no state update (the stats values it never reads back among them);
// what it holds of each event keeps the strings every event repeats once.
func TestLoopHoldsWhatTheModelSees(t *testing.T) {
	const steps = 40
	var script []llmtest.Step
	for i := range steps {
		script = append(script, llmtest.Calls(llmtest.Call("think", fmt.Sprintf(`{"thought":"step %d"}`, i))))
	}
	r := newRig(t, 0, append(script, llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)))...)
	for range steps {
		r.srv.Beside(llmtest.Text("DONE: some thinking."))
	}
	r.cfg.CondenserMaxEvents = 10
	r.log.userSays(t, "go")
	a := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log})
	if st, err := a.Run(context.Background()); err != nil || st != StatusFinished {
		t.Fatalf("run: %s, %v", st, err)
	}
	if n := len(r.log.all()); n < 3*steps {
		t.Fatalf("the log has %d events, want at least %d", n, 3*steps)
	}
	held := map[*entry]bool{}
	for _, it := range a.view.items {
		if it.e != nil {
			held[it.e] = true
		}
	}
	for _, w := range a.stuck.window {
		held[w.e] = true
	}
	if max := r.cfg.CondenserMaxEvents + stuckWindow; len(held) > max {
		t.Fatalf("the loop holds %d events of its log, want at most %d", len(held), max)
	}
	var first *event.Event
	for e := range held {
		if first == nil {
			first = &e.ev
		}
		if unsafe.StringData(e.ev.ConversationID) != unsafe.StringData(first.ConversationID) {
			t.Errorf("event %s holds a copy of its conversation's id", e.ev.ID)
		}
		if e.ev.Kind == first.Kind && unsafe.StringData(e.ev.Kind) != unsafe.StringData(first.Kind) {
			t.Errorf("event %s holds a copy of its kind", e.ev.ID)
		}
		if _, ok := e.body.(*event.StateUpdateEvent); ok {
			t.Errorf("the loop holds the state update %s", e.ev.ID)
		}
	}
	// The log itself is whole.
	for _, e := range r.log.all() {
		if body, _ := event.Decode(e); body != nil {
			if su, ok := body.(*event.StateUpdateEvent); ok && su.Key == event.StateStats && len(su.Value) == 0 {
				t.Errorf("the stored stats event %s lost its value", e.ID)
			}
		}
	}
}

// TestRunWithNothingToDoStoresItsSystemPrompt: a first run that appends nothing else (the
// log's last word is the agent's, and its status is kept) still stores the system prompt it
// made, on its own.
func TestRunWithNothingToDoStoresItsSystemPrompt(t *testing.T) {
	r := newRig(t, 0)
	msg, err := event.NewAgentMessage("agent-1", time.Now(), "Done before.", "")
	if err != nil {
		t.Fatal(err)
	}
	status, err := event.NewStateUpdate("status-1", time.Now(), event.StateExecutionStatus, StatusFinished)
	if err != nil {
		t.Fatal(err)
	}
	r.log.Append(t.Context(), []event.Event{msg, status})
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s, want finished", st)
	}
	r.wantKinds("MessageEvent:agent", "execution_status=finished", "SystemPromptEvent")
	if n := len(r.srv.Requests()); n != 0 {
		t.Fatalf("%d model calls, want none", n)
	}
}
