package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// The agent figures: the control plane's own cost of one agent step, and the memory of a
// server holding many conversations with long event logs.

// benchMarker in a conversation's first message makes the model below play a scripted agent:
// one call of a trivial tool per step, then finish.
const benchMarker = "agentd-bench steps"

// fakeModel is an OpenAI-compatible model on loopback that answers at once, from the request
// alone: ordinary conversations get "OK."; a benchMarker conversation gets the next call
// (think "step N", or terminal "echo N" when the marker says terminal) until its steps are
// done, then finish; a request without tools (the condenser's) gets a summary. It records
// when each request of a benchMarker conversation arrived and was answered.
type fakeModel struct {
	srv   *httptest.Server
	steps int

	mu      sync.Mutex
	timings []modelTiming
	// hung are the takeover conversations whose first call hung (takeoverStep), and
	// takeovers tells of each takeover conversation that reached the point of its
	// replica's death: its call hung, or it was answered with its command.
	hung      map[string]bool
	takeovers chan string
	// firsts are told when the first request of a conversation whose message carries
	// firstMarker and their tag arrives (expectFirst).
	firsts map[string]chan time.Time
}

// firstMarker, followed by a tag, in a conversation's message makes the model tell
// expectFirst's channel when the conversation's first request arrives.
const firstMarker = "agentd-bench first "

var firstRE = regexp.MustCompile(firstMarker + `([0-9a-z]+)`)

// expectFirst returns the channel told when the first request of the conversation tagged tag
// arrives.
func (m *fakeModel) expectFirst(tag string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	m.firsts[tag] = ch
	m.mu.Unlock()
	return ch
}

type modelTiming struct {
	arrived, answered time.Time
	// agent is set for the agent's requests (with tools), not the condenser's.
	agent bool
}

// benchModel is the one model of the run: every server the bench starts uses it.
var benchModel = sync.OnceValue(func() *fakeModel {
	m := &fakeModel{steps: 300, hung: map[string]bool{}, takeovers: make(chan string, 16), firsts: map[string]chan time.Time{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
})

// slowMarker in a benchMarker conversation's message makes the model answer after slowModel.
const (
	slowMarker = "slowly"
	slowModel  = 50 * time.Millisecond
)

var stepRE = regexp.MustCompile(`step (\d+)|echo (\d+)`)

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msg := map[string]any{"role": "assistant", "content": "OK."}
	bench, terminal, slow := false, false, false
	var takeover []string
	for _, mm := range req.Messages {
		if mm.Role == "user" {
			bench = strings.Contains(string(mm.Content), benchMarker)
			terminal = strings.Contains(string(mm.Content), "terminal")
			slow = strings.Contains(string(mm.Content), slowMarker)
			takeover = takeoverRE.FindStringSubmatch(string(mm.Content))
			if f := firstRE.FindStringSubmatch(string(mm.Content)); f != nil {
				m.mu.Lock()
				if ch := m.firsts[f[1]]; ch != nil {
					ch <- arrived
					delete(m.firsts, f[1])
				}
				m.mu.Unlock()
			}
			break
		}
	}
	if takeover != nil && len(req.Tools) > 0 {
		called := false
		for _, mm := range req.Messages {
			called = called || len(mm.ToolCalls) > 0
		}
		if msg = m.takeoverStep(r.Context(), takeover[0], takeover[1], called); msg == nil {
			return // the call hung until its client went away
		}
	}
	if slow {
		// A model that takes its time, as real ones do, so that many conversations run at
		// once however fast the loop is.
		time.Sleep(slowModel)
	}
	switch {
	case len(req.Tools) == 0:
		msg["content"] = "SUMMARY: the agent took numbered steps."
	case bench:
		next := 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if calls := req.Messages[i].ToolCalls; len(calls) > 0 {
				if sm := stepRE.FindStringSubmatch(calls[0].Function.Arguments); sm != nil {
					n, _ := strconv.Atoi(sm[1] + sm[2])
					next = n + 1
				}
				break
			}
		}
		name, args := "think", fmt.Sprintf(`{"thought":"step %d"}`, next)
		if terminal {
			name, args = "terminal", fmt.Sprintf(`{"command":"echo %d"}`, next)
		}
		if next >= m.steps {
			name, args = "finish", `{"message":"done"}`
		}
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": "call_" + strconv.Itoa(next), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-bench", "object": "chat.completion", "created": arrived.Unix(), "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
	})
	if bench && !slow {
		m.mu.Lock()
		m.timings = append(m.timings, modelTiming{arrived: arrived, answered: time.Now(), agent: len(req.Tools) > 0})
		m.mu.Unlock()
	}
}

// takeTimings returns the timings recorded so far and forgets them.
func (m *fakeModel) takeTimings() []modelTiming {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.timings
	m.timings = nil
	return t
}

// llmFlags configure a server to use benchModel as its server-wide model.
func llmFlags() []string {
	return []string{"--llm-model", "gpt-4o", "--llm-base-url", benchModel().srv.URL + "/v1", "--llm-api-key", "sk-bench"}
}

// benchAgent times agent steps of a conversation in a sandbox: the model answers at once,
// and each step's control-plane overhead is the time from one model request to the next,
// less the model's own time (its handler) in between, less the tool's time. With think the
// tool runs in the control plane and costs nothing measurable; with terminal it runs in the
// sandbox, and its time, measured by calling the runtime directly, is subtracted at the median.
func benchAgent(ctx context.Context, s *server, o options, progress func(string, ...any)) ([]row, []string, error) {
	st, err := timeAgentSteps(ctx, s, o, "agent", progress)
	if err != nil {
		return nil, nil, err
	}
	var rows []row
	base := "one call of the same model through the OpenAI SDK"
	for _, tool := range agentTools {
		for _, p := range []float64{50, 99} {
			figure := fmt.Sprintf("agent step, control-plane overhead with %s (%d steps), p%.0f", tool, len(st.overheads[tool]), p)
			rows = append(rows, timeRow(figure, p, st.overheads[tool], st.sdk, base))
		}
	}
	notes := []string{fmt.Sprintf("terminal steps: the tool's own time, %s at the median (a direct POST /api/tools/terminal to the runtime, echo N), is taken off each step.",
		unitTime.format(seconds(st.toolTime))),
		"agent step overhead: from one model request to the next, less the model's own time (and the tool's): parsing the answer, building and durably storing the events (SQLite in WAL mode, synchronous=NORMAL; with think the action and its result in one transaction, as the loop answers think itself; with terminal the action, then the result), running the tool call round trip, building the next prompt from the log (condensing every 40 steps at the default limit of 80 events), and sending it."}
	return rows, notes, nil
}

// agentTools are the tools whose steps the agent figures time.
var agentTools = []string{"think", "terminal"}

// agentSteps is what timeAgentSteps measured on one server.
type agentSteps struct {
	// overheads are each tool's steps' control-plane overheads, the tool's own time taken off.
	overheads map[string][]time.Duration
	// sdk are the primitive's times: one call of the model through the client the agent uses.
	sdk []time.Duration
	// toolTime is the terminal tool's own time at the median, taken off its steps.
	toolTime time.Duration
}

// timeAgentSteps runs a conversation of o.steps steps of each of agentTools on s, in a
// sandbox of its own, and returns their overheads (see benchAgent) beside the primitive's
// times. name names its profiles (-profile).
func timeAgentSteps(ctx context.Context, s *server, o options, name string, progress func(string, ...any)) (agentSteps, error) {
	steps := o.steps
	m := benchModel()
	m.steps = steps
	svc := s.app.Sandboxes
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return agentSteps{}, err
	}
	// The primitive: one model call through the same client the agent uses.
	client, err := app.NewLLM(llm.Config{Model: "gpt-4o", BaseURL: m.srv.URL + "/v1", APIKey: "sk-bench"})
	if err != nil {
		return agentSteps{}, err
	}
	out := agentSteps{overheads: map[string][]time.Duration{}}
	for range 200 {
		start := time.Now()
		if _, err := client.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}}},
			Tools: []llm.ToolSpec{{Name: "think", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}); err != nil {
			return agentSteps{}, err
		}
		out.sdk = append(out.sdk, time.Since(start))
	}
	m.takeTimings()
	// A run stops at the user's max_iterations (500 by default): this one takes every step.
	if err := s.call(ctx, "POST", "/api/settings", map[string]any{"max_iterations": steps + 10}, nil); err != nil {
		return agentSteps{}, fmt.Errorf("set max_iterations: %w", err)
	}
	for _, tool := range agentTools {
		progress("timing %d agent steps with %s", steps, tool)
		stopProfile, err := s.profile(o, name+"-"+tool)
		if err != nil {
			return agentSteps{}, err
		}
		overheads, err := s.timeSteps(ctx, sb.ID, tool)
		stopProfile()
		if err != nil {
			return agentSteps{}, err
		}
		toolTime := time.Duration(0)
		if tool == "terminal" {
			rt, err := svc.Client(ctx, s.ownerID, sb.ID)
			if err != nil {
				return agentSteps{}, err
			}
			var direct []time.Duration
			for i := range 100 {
				start := time.Now()
				if _, err := rt.Tool(ctx, "terminal", "bench-direct", json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i))); err != nil {
					return agentSteps{}, err
				}
				direct = append(direct, time.Since(start))
			}
			toolTime = percentile(direct, 50)
			out.toolTime = toolTime
		}
		for i := range overheads {
			overheads[i] -= toolTime
		}
		out.overheads[tool] = overheads
	}
	return out, nil
}

// timeSteps runs one conversation of benchModel's steps with tool and returns each step's
// overhead: the time between consecutive model requests less the model's time in between.
func (s *server) timeSteps(ctx context.Context, sandboxID, tool string) ([]time.Duration, error) {
	benchModel().takeTimings()
	text := benchMarker
	if tool == "terminal" {
		text += " with terminal"
	}
	body := map[string]any{"sandbox_id": sandboxID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}}
	taskID, err := s.startConversation(ctx, body)
	if err != nil {
		return nil, err
	}
	convIDs, err := s.waitTasksReady(ctx, []string{taskID})
	if err != nil {
		return nil, err
	}
	if err := s.waitFinished(ctx, convIDs[0], 5*time.Minute); err != nil {
		return nil, err
	}
	// A step spans from the answer to one agent request to the next agent request; the
	// condenser's requests in between are the model's time too.
	var out []time.Duration
	var last *modelTiming
	var modelTime time.Duration
	for _, t := range benchModel().takeTimings() {
		if !t.agent {
			modelTime += t.answered.Sub(t.arrived)
			continue
		}
		if last != nil {
			out = append(out, t.arrived.Sub(last.answered)-modelTime)
		}
		last, modelTime = &t, 0
	}
	return out, nil
}

// waitFinished polls the conversation until its agent stopped, within limit; an agent that
// stopped other than finished is an error.
func (s *server) waitFinished(ctx context.Context, convID string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var convs []*struct {
			ExecutionStatus *string `json:"execution_status"`
		}
		if err := s.call(ctx, "GET", "/api/v1/app-conversations?ids="+convID, nil, &convs); err != nil {
			return err
		}
		if len(convs) != 1 || convs[0] == nil {
			return fmt.Errorf("bench conversation %s not found", convID)
		}
		if st := convs[0].ExecutionStatus; st != nil && *st != "running" && *st != "idle" {
			if *st != "finished" {
				return fmt.Errorf("bench conversation ended %s", *st)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench conversation still running after %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// benchEventMemory stores conversations × events realistic events (as an agent writes them)
// in conversations of a running sandbox, reads each log back through the conversation API
// and lists the conversations, and reports the process's RSS.
func benchEventMemory(ctx context.Context, s *server, dataDir string, conversations, events int, progress func(string, ...any)) ([]row, []string, error) {
	// Both readings follow a collection that returns free memory to the system, so that
	// garbage of the earlier figures does not count on either side.
	settle := func() { runtime.GC(); debug.FreeOSMemory() }
	settle()
	before, err := readRSS()
	if err != nil {
		return nil, nil, err
	}
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	progress("creating %d conversations of %d events", conversations, events)
	ids, err := s.seedConversationIDs(ctx, sb.ID, conversations)
	if err != nil {
		return nil, nil, err
	}
	// Wait for their agents (which answer "OK.") to stop, then fill the logs directly in the
	// store: through a second store on the same file, as the API has no bulk append.
	s.waitIdle()
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, app.DBFile))
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	for _, cid := range ids {
		evs, err := fakeLog(cid, events)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		if err := st.AppendEvents(ctx, evs); err != nil {
			st.Close()
			return nil, nil, err
		}
	}
	st.Close()
	stored := time.Since(start)

	progress("reading %d event logs through the conversation API", conversations)
	read := 0
	for _, cid := range ids {
		page := ""
		for {
			var p struct {
				Items      []json.RawMessage `json:"items"`
				NextPageID *string           `json:"next_page_id"`
			}
			path := "/agent-server/" + sb.ID + "/api/conversations/" + cid + "/events/search?page_id=" + page
			if err := s.call(ctx, "GET", path, nil, &p); err != nil {
				return nil, nil, err
			}
			read += len(p.Items)
			if p.NextPageID == nil {
				break
			}
			page = *p.NextPageID
		}
	}
	for page := ""; ; {
		var p struct {
			NextPageID *string `json:"next_page_id"`
		}
		if err := s.call(ctx, "GET", "/api/v1/app-conversations/search?page_id="+page, nil, &p); err != nil {
			return nil, nil, err
		}
		if p.NextPageID == nil {
			break
		}
		page = *p.NextPageID
	}
	settle()
	after, err := readRSS()
	if err != nil {
		return nil, nil, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rows := []row{{
		figure: fmt.Sprintf("RSS after %d conversations × %d events stored, every log read through the conversation API", conversations, events),
		agentd: float64(after), primitive: float64(before), unit: unitSize,
		baseline: "the same process before they were created",
	}}
	notes := []string{fmt.Sprintf("event logs: %d events stored in %.2f s; %d read back through GET …/events/search (100 per page); Go heap in use afterwards %.1f MiB. Idle conversations hold nothing in memory: the log is read from SQLite when asked for.",
		conversations*events, stored.Seconds(), read, float64(ms.HeapInuse)/(1<<20))}
	return rows, notes, nil
}

// idle reports whether the server runs no start task and no agent loop.
func (s *server) idle() bool { return !s.app.Conversations.Busy() }

// waitIdle waits until the server is idle.
func (s *server) waitIdle() {
	for !s.idle() {
		time.Sleep(20 * time.Millisecond)
	}
}

// startConversation starts a conversation with body and returns its start task's id.
func (s *server) startConversation(ctx context.Context, body any) (string, error) {
	var task struct {
		ID string `json:"id"`
	}
	if err := s.call(ctx, "POST", "/api/v1/app-conversations", body, &task); err != nil {
		return "", err
	}
	return task.ID, nil
}

// seedConversationIDs creates n conversations in a sandbox and returns their ids once READY.
func (s *server) seedConversationIDs(ctx context.Context, sandboxID string, n int) ([]string, error) {
	var taskIDs []string
	body := map[string]any{"sandbox_id": sandboxID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "hi"}}}}
	for range n {
		id, err := s.startConversation(ctx, body)
		if err != nil {
			return nil, err
		}
		taskIDs = append(taskIDs, id)
	}
	return s.waitTasksReady(ctx, taskIDs)
}

// fakeLog makes n events like an agent's: actions and observations of terminal commands
// with outputs of a few hundred bytes.
func fakeLog(convID string, n int) ([]event.Event, error) {
	now := time.Now()
	out := make([]event.Event, 0, n)
	for i := 0; len(out) < n; i++ {
		call := fmt.Sprintf("call_%d", i)
		cmd := fmt.Sprintf("grep -rn 'func handler%d' ./internal", i)
		act, err := event.New(id.Ordered(), now, event.SourceAgent, &event.ActionEvent{
			Thought:  []event.TextPart{event.Text("Looking for the handler before changing it.")},
			Action:   json.RawMessage(fmt.Sprintf(`{"kind":"TerminalAction","command":%q}`, cmd)),
			ToolName: "terminal", ToolCallID: call, LLMResponseID: "chatcmpl-bench", SecurityRisk: "UNKNOWN",
			ToolCall: event.ToolCall{ID: call, Name: "terminal", Arguments: fmt.Sprintf(`{"command":%q}`, cmd), Origin: "completion"},
		})
		if err != nil {
			return nil, err
		}
		output := strings.Repeat(fmt.Sprintf("internal/server/handler%d.go:42:func handler%d(w http.ResponseWriter) {\n", i, i), 4)
		obs, err := event.New(id.Ordered(), now, event.SourceEnvironment, &event.ObservationEvent{
			Observation: json.RawMessage(fmt.Sprintf(`{"kind":"TerminalObservation","command":%q,"exit_code":0,"content":[{"type":"text","text":%q}],"is_error":false}`, cmd, output)),
			ActionID:    act.ID, ToolName: "terminal", ToolCallID: call,
		})
		if err != nil {
			return nil, err
		}
		obs.LLMText = output + "[Command finished with exit code 0]"
		act.ConversationID, obs.ConversationID = convID, convID
		out = append(out, act, obs)
	}
	return out[:n], nil
}
