package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unique"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/tool"
)

// Agent runs one conversation's loop. It is not safe for concurrent use: the runner keeps at
// most one Run per conversation.
type Agent struct {
	o   Options
	cfg Config
	log *slog.Logger
	// system is the system prompt, one copy for all the loops whose conversations started
	// alike (it is several kilobytes, kept for as long as a loop runs).
	system unique.Handle[string]
	// dynamic is the per-conversation part of the system message: the always-on skills.
	dynamic string
	tools   toolset
	specs   []llm.ToolSpec

	// logState is what the loop knows of the log, read so far (logstate.go); prompt follows
	// its view incrementally (view.go).
	logState
	prompt promptState
	// stepRead says the last step ended by reading the log, after its last append: the next
	// iteration need not read it again at once.
	stepRead bool
	// held are the events prepare made, stored with the next append: on a conversation's
	// first run, its system prompt and its running status are one write.
	held []event.Event
	// interned are the strings intern shares.
	interned map[string]string
}

// New returns an Agent; Run starts it.
func New(o Options) *Agent {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = id.Ordered
	}
	if o.Metrics == nil {
		o.Metrics = &llm.Metrics{}
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	if o.PauseRequested == nil {
		o.PauseRequested = func() bool { return false }
	}
	cfg := o.Config.withDefaults()
	if cfg.MaxBudget > 0 {
		o.Metrics.SetMaxBudget(cfg.MaxBudget) // the stats show the budget beside the cost
	}
	tools := toolset{extra: cfg.Tools}
	return &Agent{
		o: o, cfg: cfg, log: o.Logger,
		system:   unique.Make(buildSystemPrompt(cfg.Workspace, cfg.Instructions) + repositorySection(cfg.Repository) + secretsSection(cfg.Secrets)),
		dynamic:  repoContext(cfg.Skills),
		tools:    tools,
		specs:    tools.specs(),
		logState: logState{scanSkills: len(cfg.Skills) > 0},
	}
}

// Run brings the conversation forward until the agent has nothing left to do: it finished
// or waits for the user, hit its iteration limit, is stuck, failed, or was paused. It
// returns the execution status it left, which is also recorded in the log.
//
// A conversation with nothing to do (its last word is the agent's) keeps its status. Run
// returns an error only when ctx ended or the log could not be read or written; the status
// stays as recorded then (running, for a loop cut short by a shutdown), so that the next Run
// continues.
//
// A pause stops the run between steps when PauseRequested says so, or at once when ctx is
// cancelled with the cause ErrPaused: the model call in flight is dropped, unrecorded, and a
// tool call in flight is answered with an error that says the pause interrupted it (so the
// next run's prompt is well formed). Either way the pause is recorded and Run returns
// StatusPaused without an error.
func (a *Agent) Run(ctx context.Context) (Status, error) {
	st, err := a.run(ctx)
	if err != nil && errors.Is(context.Cause(ctx), ErrPaused) {
		return a.pause(ctx)
	}
	return st, err
}

// ErrPaused is the cause to cancel Run's context with to pause the agent at once.
var ErrPaused = errors.New("the user paused the agent")

func (a *Agent) run(ctx context.Context) (Status, error) {
	st, err := a.steps(ctx)
	if err == nil && len(a.held) > 0 {
		// The run ended without an append: what prepare made is stored on its own.
		err = a.append(ctx)
	}
	return st, err
}

func (a *Agent) steps(ctx context.Context) (Status, error) {
	if err := a.refresh(ctx); err != nil {
		return a.status, err
	}
	a.held = nil
	if err := a.prepare(ctx); err != nil {
		return a.status, err
	}
	// The log was read just before: the first step need not read it again.
	a.stepRead = true
	if a.status == StatusWaitingForConfirmation {
		if err := a.answerPending(ctx); err != nil {
			return a.fail(ctx, err)
		}
	}
	for iteration := 0; ; {
		// What others appended: read now, unless the step just read it after its last append
		// (what arrives later is read after the next append, before the next prompt, as a
		// message arriving during the model call always was).
		if !a.stepRead {
			if err := a.refresh(ctx); err != nil {
				return a.status, err
			}
		}
		a.stepRead = false
		if a.o.PauseRequested() {
			return a.pause(ctx)
		}
		if next, ok := a.nextReplay(); ok {
			if err := a.setStatus(ctx, StatusRunning); err != nil {
				return a.status, err
			}
			if err := a.replay(ctx, next); err != nil {
				return a.fail(ctx, err)
			}
			continue
		}
		if !a.agentsTurn {
			if a.status == StatusRunning {
				return StatusFinished, a.setStatus(ctx, StatusFinished)
			}
			if a.status == "" || a.status == StatusPaused {
				// Nothing to answer: a new conversation, or a paused one resumed.
				return StatusIdle, a.setStatus(ctx, StatusIdle)
			}
			return a.status, nil
		}
		if err := a.setStatus(ctx, StatusRunning); err != nil {
			return a.status, err
		}
		if spent, over := a.overBudget(); over {
			return a.stop(ctx, StatusError, "MaxBudgetReached",
				fmt.Sprintf("The conversation reached its budget: $%.4f spent of $%.4f (max_budget_per_task). Raise max_budget_per_task in your settings, then send a message to let it continue.", spent, a.cfg.MaxBudget))
		}
		if iteration >= a.cfg.MaxIterations {
			return a.stop(ctx, StatusError, "MaxIterationsReached",
				fmt.Sprintf("The agent reached its limit of %d iterations without finishing. Send a message to let it continue.", a.cfg.MaxIterations))
		}
		if !a.cfg.DisableStuckDetection {
			switch v := a.stuck.verdict(); {
			case v.nudge:
				if err := a.appendNew(ctx, func(id string, at time.Time) (event.Event, error) {
					return event.NewEnvironmentMessage(id, at, nudgeRepeatedError)
				}); err != nil {
					return a.status, err
				}
			case v.reason != "":
				return a.stop(ctx, StatusStuck, "AgentStuckInLoop", v.reason)
			}
		}
		iteration++
		if err := a.activateKnowledge(ctx); err != nil {
			return a.status, err
		}
		// The model reads the log with what prepare made in it.
		if err := a.append(ctx); err != nil {
			return a.status, err
		}
		if err := a.step(ctx); err != nil {
			if errors.Is(err, errWaiting) {
				return a.status, nil
			}
			return a.fail(ctx, err)
		}
		// A step ends with an append, which reads the log after it.
		a.stepRead = true
	}
}

// overBudget reports the cost so far, and whether it has reached the budget.
func (a *Agent) overBudget() (spent float64, over bool) {
	if a.cfg.MaxBudget <= 0 {
		return 0, false
	}
	spent = a.o.Metrics.Snapshot().AccumulatedCost
	return spent, spent >= a.cfg.MaxBudget
}

// prepare makes the system prompt's event the first time, and answers the tool calls a
// previous process left without a result: they were cut short by a restart. Actions waiting
// for the user's confirmation have no result either, and keep waiting. The events are held
// for the next append.
func (a *Agent) prepare(ctx context.Context) error {
	var evs []event.Event
	if !a.hasSystemPrompt {
		sp := &event.SystemPromptEvent{SystemPrompt: event.Text(a.system.Value()), Tools: a.tools.definitions()}
		if a.dynamic != "" {
			dc := event.Text(a.dynamic)
			sp.DynamicContext = &dc
		}
		ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, sp)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	var interrupted []*event.ActionEvent
	if a.status != StatusWaitingForConfirmation {
		interrupted = a.orphans()
	}
	for _, act := range interrupted {
		ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, &event.AgentErrorEvent{
			ToolName: act.ToolName, ToolCallID: act.ToolCallID, Error: restartInterrupted,
		})
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	a.held = evs
	return nil
}

// orphans are the actions without a result.
func (a *Agent) orphans() []*event.ActionEvent { return a.pending.actions() }

// step makes one model call and carries out what the model asked for.
func (a *Agent) step(ctx context.Context) error {
	a.o.Observer.Step()
	if err := a.condenseIfNeeded(ctx, false); err != nil {
		return err
	}
	resp, err := a.complete(ctx)
	var le *llm.Error
	if errors.As(err, &le) && le.Kind == llm.KindContextWindow {
		// The history does not fit: condense half of it away and try once more.
		a.log.Info("context window exceeded; condensing", "model", a.cfg.Model)
		if cerr := a.condenseIfNeeded(ctx, true); cerr != nil {
			return errors.Join(err, cerr)
		}
		resp, err = a.complete(ctx)
	}
	if err != nil {
		return err
	}
	a.o.Metrics.Add(cmpOr(resp.Model, a.cfg.Model), resp.Usage, resp.ResponseID)
	stats, err := a.statsEvent()
	if err != nil {
		return err
	}
	calls := truncateAtFinish(resp.Message.ToolCalls)
	text := strings.TrimSpace(resp.Message.Text())
	if len(calls) == 0 {
		msg, err := event.NewAgentMessage(a.o.NewID(), a.o.Now(), resp.Message.Text(), resp.ResponseID)
		if err != nil {
			return err
		}
		evs := []event.Event{stats, msg}
		if text == "" {
			nudge, err := event.NewEnvironmentMessage(a.o.NewID(), a.o.Now(), nudgeEmptyReply)
			if err != nil {
				return err
			}
			evs = append(evs, nudge)
		}
		return a.append(ctx, evs...)
	}
	return a.act(ctx, resp, calls, stats)
}

// complete calls the model with the current view and tools.
func (a *Agent) complete(ctx context.Context) (llm.Response, error) {
	if a.o.LLM == nil {
		return llm.Response{}, errNoLLM
	}
	if a.o.UpdateTools != nil {
		if extra, changed := a.o.UpdateTools(ctx); changed {
			a.tools = toolset{extra: extra}
			a.specs = a.tools.specs()
		}
	}
	return a.o.LLM.Complete(ctx, llm.Request{
		Model:     a.cfg.Model,
		Messages:  a.prompt.messages(a.systemText(), a.view.items, a.view.gen, llm.AcceptsImages(a.cfg.Model)),
		Tools:     a.specs,
		MaxTokens: a.cfg.MaxTokens,
	})
}

var errNoLLM = errors.New("no LLM is configured for this conversation")

// act records the model's tool calls as actions, then runs them in order and records each
// result as soon as it is known.
func (a *Agent) act(ctx context.Context, resp llm.Response, toolCalls []llm.ToolCall, stats event.Event) error {
	calls := make([]call, len(toolCalls))
	risks := make([]confirm.Risk, len(toolCalls))
	actions := make([]event.Event, len(toolCalls))
	evs := []event.Event{stats}
	var thought []event.TextPart
	if t := resp.Message.Text(); strings.TrimSpace(t) != "" {
		thought = []event.TextPart{event.Text(t)}
	}
	for i, tc := range toolCalls {
		if tc.ID == "" {
			// The id's last 24 digits: an event id begins with its time, which two calls
			// of one response share.
			uid := strings.ReplaceAll(a.o.NewID(), "-", "")
			tc.ID = "call_" + uid[max(0, len(uid)-24):]
		}
		calls[i] = a.tools.parseCall(tc)
		risks[i] = a.assess(calls[i])
		body := &event.ActionEvent{
			Thought: []event.TextPart{}, Action: calls[i].action, ToolName: calls[i].name,
			ToolCallID: tc.ID, LLMResponseID: resp.ResponseID, SecurityRisk: string(risks[i]),
			ToolCall: event.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Origin: "completion"},
			Summary:  calls[i].summary,
		}
		if i == 0 && thought != nil {
			body.Thought = thought // only the first action of a response carries its text
		}
		ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, body)
		if err != nil {
			return err
		}
		actions[i] = ev
		evs = append(evs, ev)
	}
	// The errors of invalid calls follow all the actions, so the actions of one response stay
	// together in the log.
	for _, c := range calls {
		if c.problem == "" {
			continue
		}
		ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, &event.AgentErrorEvent{
			ToolName: c.name, ToolCallID: c.llm.ID, Error: c.problem,
		})
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	waiting := a.mustConfirm(calls, risks)
	if waiting {
		// With the actions, in one append: a restart finds them waiting, never half-recorded.
		st, err := a.statusEvent(StatusWaitingForConfirmation)
		if err != nil {
			return err
		}
		evs = append(evs, st)
	}
	// The calls the loop answers itself, at once and without effects (think, finish), are
	// answered in the same append as the actions while no other call comes before them: one
	// transaction for the step instead of two, and the log is the same.
	answered := 0
	for i, c := range calls {
		if waiting {
			break
		}
		if c.problem != "" {
			answered = i + 1
			continue
		}
		began := time.Now()
		res, ok := answerAtOnce(c)
		if !ok {
			break
		}
		a.o.Observer.ToolCall(c.name, time.Since(began), res.IsError)
		ev, err := a.observation(c, actions[i].ID, res)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
		answered = i + 1
	}
	if err := a.append(ctx, evs...); err != nil {
		return err
	}
	if waiting {
		return errWaiting
	}
	for i, c := range calls[answered:] {
		if c.problem != "" {
			continue
		}
		if err := a.execute(ctx, c, actions[answered+i].ID); err != nil {
			return err
		}
	}
	return nil
}

// answerAtOnce answers the calls whose result depends on nothing but their arguments and
// which change nothing: think and finish.
func answerAtOnce(c call) (tool.Result, bool) {
	switch c.name {
	case tool.Finish:
		return tool.FinishResult(*c.args.(*tool.FinishArgs)), true
	case tool.Think:
		return tool.ThinkResult(*c.args.(*tool.ThinkArgs)), true
	}
	return tool.Result{}, false
}

// execute runs one valid call and records its observation, or an agent error when the call
// could not be made.
func (a *Agent) execute(ctx context.Context, c call, actionID string) error {
	var res tool.Result
	var err error
	began := time.Now()
	switch c.name {
	case tool.Finish:
		res = tool.FinishResult(*c.args.(*tool.FinishArgs))
	case tool.Think:
		res = tool.ThinkResult(*c.args.(*tool.ThinkArgs))
	case tool.TaskTracker:
		_, res = tool.ApplyTaskTracker(a.taskList, *c.args.(*tool.TaskTrackerArgs))
	default:
		if a.o.Tools == nil {
			err = fmt.Errorf("%w: no executor", ErrUnavailable)
		} else {
			res, err = a.o.Tools.Run(ctx, c.name, c.argsJSON)
		}
	}
	a.o.Observer.ToolCall(c.name, time.Since(began), err != nil || res.IsError)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := fmt.Sprintf("Error executing tool %q: %v", c.name, err)
		ev, nerr := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, &event.AgentErrorEvent{
			ToolName: c.name, ToolCallID: c.llm.ID, Error: msg,
		})
		if nerr != nil {
			return nerr
		}
		if aerr := a.append(ctx, ev); aerr != nil {
			return aerr
		}
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return nil
	}
	ev, err := a.observation(c, actionID, res)
	if err != nil {
		return err
	}
	return a.append(ctx, ev)
}

// observation is the event that records res, the result of the call c of action actionID.
func (a *Agent) observation(c call, actionID string, res tool.Result) (event.Event, error) {
	obs := res.Observation
	if len(obs) == 0 {
		obs = tool.ErrorResult(c.name, res.Text).Observation
		if !res.IsError {
			obs, _ = json.Marshal(map[string]any{"kind": c.tool.ObservationKind, "content": tool.Content(res.Text), "is_error": false})
		}
	}
	ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceEnvironment, &event.ObservationEvent{
		Observation: obs, ActionID: actionID, ToolName: c.name, ToolCallID: c.llm.ID,
	})
	if err != nil {
		return event.Event{}, err
	}
	ev.LLMText = res.Text
	return ev, nil
}

// statsEvent records the usage so far, as OpenHands' stats state update.
func (a *Agent) statsEvent() (event.Event, error) {
	return event.NewStateUpdate(a.o.NewID(), a.o.Now(), event.StateStats, map[string]any{
		"usage_to_metrics": map[string]any{"default": a.o.Metrics.Snapshot()},
	})
}

// pause records the user's pause, first answering the tool calls it left without a result:
// the one in flight, and those of the same response not yet started. It runs after ctx was
// cancelled by the pause, so nothing it does waits on ctx.
func (a *Agent) pause(ctx context.Context) (Status, error) {
	ctx = context.WithoutCancel(ctx)
	if err := a.refresh(ctx); err != nil {
		return a.status, err
	}
	var evs []event.Event
	for i, act := range a.orphans() {
		ev, err := a.pausedObservation(ctx, act, i == 0)
		if err != nil {
			return a.status, err
		}
		evs = append(evs, ev)
	}
	ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceUser, &event.PauseEvent{})
	if err != nil {
		return a.status, err
	}
	st, err := a.statusEvent(StatusPaused)
	if err != nil {
		return a.status, err
	}
	if err := a.append(ctx, append(evs, ev, st)...); err != nil {
		return a.status, err
	}
	return a.status, nil
}

// pausedObservation answers a tool call the pause left without a result, as what happened to
// it. The calls of a response run one after the other, so the first without a result (first)
// was in flight or about to start, and the others never started. A terminal command in flight
// is stopped and reported with the output it printed.
func (a *Agent) pausedObservation(ctx context.Context, act *event.ActionEvent, first bool) (event.Event, error) {
	note := pauseNotStarted
	var res tool.Result
	switch {
	case first && act.ToolName == tool.Terminal:
		note = pauseCommandUnknown
		if in, ok := a.o.Tools.(Interrupter); ok {
			r, found, err := in.Interrupt(ctx)
			switch {
			case err != nil:
				a.log.Warn("pause: stop the command in flight", "err", err)
			case found:
				res, note = r, pauseStoppedCommand
			default:
				note = pauseNoCommand
			}
		}
	case first:
		note = pauseLeftCall
	}
	toolKind, _ := kinds(act.ToolName)
	obsKind := strings.TrimSuffix(toolKind, "Tool") + "Observation"
	if t, ok := a.tools.lookup(act.ToolName); ok {
		obsKind = t.ObservationKind
	}
	obs := withLeadingNote(res.Observation, obsKind, note)
	ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceEnvironment, &event.ObservationEvent{
		Observation: obs, ActionID: act.ID, ToolName: act.ToolName, ToolCallID: act.ToolCallID,
	})
	if err != nil {
		return event.Event{}, err
	}
	ev.LLMText = note
	if res.Text != "" {
		ev.LLMText += "\n\n" + res.Text
	}
	return ev, nil
}

// withLeadingNote is the observation obs (a JSON object; empty: a new one of kind) with note
// before its content, so that people read what happened to the call above its output.
func withLeadingNote(obs json.RawMessage, kind, note string) json.RawMessage {
	var m map[string]any
	if len(obs) == 0 || json.Unmarshal(obs, &m) != nil || m == nil {
		m = map[string]any{"kind": kind, "is_error": false}
	}
	content := []any{map[string]any{"type": "text", "text": note + "\n\n"}}
	if old, ok := m["content"].([]any); ok && len(old) > 0 {
		content = append(content, old...)
	} else {
		content[0] = map[string]any{"type": "text", "text": note}
	}
	m["content"] = content
	b, err := json.Marshal(m)
	if err != nil {
		return obs
	}
	return b
}

// stop ends the run in status with an event that says why.
func (a *Agent) stop(ctx context.Context, status Status, code, detail string) (Status, error) {
	a.log.Info("agent stopped", "status", string(status), "code", code)
	ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceEnvironment, &event.ConversationErrorEvent{Code: code, Detail: detail})
	if err != nil {
		return a.status, err
	}
	st, err := a.statusEvent(status)
	if err != nil {
		return a.status, err
	}
	if err := a.append(ctx, ev, st); err != nil {
		return a.status, err
	}
	return a.status, nil
}

// fail ends the run after a failed step: a shutdown leaves the status as it is, anything
// else is recorded as an error the user can read.
func (a *Agent) fail(ctx context.Context, err error) (Status, error) {
	if ctx.Err() != nil {
		return a.status, ctx.Err()
	}
	code, detail := describe(err)
	a.log.Warn("agent run failed", "code", code, "err", err)
	return a.stop(ctx, StatusError, code, detail)
}

// describe names an error for a ConversationErrorEvent, in words fit for the user.
func describe(err error) (code, detail string) {
	var le *llm.Error
	var re *llm.RetryError
	attempts := ""
	if errors.As(err, &re) {
		attempts = fmt.Sprintf(" (gave up after %d attempts)", re.Attempts)
	}
	switch {
	case errors.Is(err, errNoLLM):
		return "LLMNotConfigured", "No LLM is configured for this conversation: set llm_model and llm_api_key in your settings, then send a message."
	case errors.Is(err, ErrUnavailable):
		return "SandboxUnavailable", "The conversation's sandbox is no longer available: " + err.Error()
	case errors.As(err, &le):
		codes := map[llm.ErrorKind]string{
			llm.KindAuth: "LLMAuthenticationError", llm.KindRateLimit: "LLMRateLimitError",
			llm.KindServer: "LLMServiceUnavailableError", llm.KindTimeout: "LLMTimeoutError",
			llm.KindConnection: "LLMConnectionError", llm.KindBadRequest: "LLMBadRequestError",
			llm.KindContextWindow: "LLMContextWindowExceedError", llm.KindInternalAddress: "LLMInternalAddressError",
		}
		return cmpOr(codes[le.Kind], "LLMError"), "The model call failed" + attempts + ": " + le.Error()
	}
	return "AgentError", "The agent stopped because of an internal error; the server log has the details."
}

// setStatus records a change of the execution status (nothing when it stays the same).
func (a *Agent) setStatus(ctx context.Context, s Status) error {
	if a.status == s {
		return nil
	}
	ev, err := a.statusEvent(s)
	if err != nil {
		return err
	}
	return a.append(ctx, ev)
}

func (a *Agent) statusEvent(s Status) (event.Event, error) {
	if !CanTransition(a.status, s) {
		a.log.Warn("unexpected execution status change", "from", string(a.status), "to", string(s))
	}
	return event.NewStateUpdate(a.o.NewID(), a.o.Now(), event.StateExecutionStatus, s)
}

// appendNew appends one event made by mk.
func (a *Agent) appendNew(ctx context.Context, mk func(id string, at time.Time) (event.Event, error)) error {
	ev, err := mk(a.o.NewID(), a.o.Now())
	if err != nil {
		return err
	}
	return a.append(ctx, ev)
}

// append stores evs and brings the local copy of the log up to them, so that it keeps the
// log's order even when others appended meanwhile: when nothing was logged between the last
// read and evs, evs as stored are all that is new; else the log is read back.
func (a *Agent) append(ctx context.Context, evs ...event.Event) error {
	if len(a.held) > 0 {
		evs = append(a.held, evs...)
		a.held = nil
	}
	if len(evs) == 0 {
		return nil
	}
	// Appends survive a cancelled run: what happened must be recorded.
	ctx = context.WithoutCancel(ctx)
	prev, err := a.o.Log.Append(ctx, evs)
	if err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	if prev != a.lastSeq {
		return a.refresh(ctx)
	}
	return a.take(evs)
}

// refresh reads the events appended since the last read.
func (a *Agent) refresh(ctx context.Context) error {
	evs, err := a.o.Log.Load(ctx, a.lastSeq)
	if err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	return a.take(evs)
}

// take adds evs, the log's next events, to the local copy.
func (a *Agent) take(evs []event.Event) error {
	for _, ev := range evs {
		// The few strings every event repeats (its conversation, kind and source) are held
		// once; the decoded body shares them.
		ev.ConversationID, ev.Kind, ev.Source = a.intern(ev.ConversationID), a.intern(ev.Kind), a.intern(ev.Source)
		body, err := event.Decode(ev)
		if err != nil {
			return err
		}
		// The decoded body is what the loop reads; the raw JSON beside it would double what
		// a long log holds in memory for as long as the loop runs.
		ev.Body = nil
		a.add(&entry{ev: ev, body: body})
	}
	return nil
}

// intern returns the loop's copy of s, one of the few strings every event repeats.
func (a *Agent) intern(s string) string {
	if v, ok := a.interned[s]; ok {
		return v
	}
	if a.interned == nil {
		a.interned = map[string]string{}
	}
	if len(a.interned) < maxInterned {
		a.interned[s] = s
	}
	return s
}

// maxInterned bounds what intern holds: a conversation, a few dozen kinds and sources.
const maxInterned = 64

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
