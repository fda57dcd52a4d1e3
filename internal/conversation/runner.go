package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/internal/agent"
	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/logctx"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/tool"
	"github.com/agentd/agentd/internal/tool/mcp"
)

// The runner: at most one agent loop per conversation, owned by the Service. A loop starts
// when a start task reaches READY, when a user message arrives with run, on Run, and for
// every conversation whose agent was running when the previous process stopped. It ends
// when the agent has nothing left to do; Close cancels every loop and waits for it, leaving
// the execution status "running" so that the next process picks the conversation up.

// ErrAlreadyRunning: the conversation's agent is running already.
var ErrAlreadyRunning = errors.New("the conversation's agent is already running")

// ErrNotReady: the conversation is still starting (or failed to start).
var ErrNotReady = errors.New("the conversation is not ready")

// Runtime is what the service needs of a sandbox's runtime: running tools, and commands of
// its own (a conversation's start prepares its repository with them).
type Runtime interface {
	RunTool(ctx context.Context, name string, req runtimeclient.ToolRequest) (tool.Result, error)
	InterruptTool(ctx context.Context, conversationID string) (tool.Result, bool, error)
	Run(ctx context.Context, req runtimeclient.CommandRequest) (runtimeclient.CommandResult, error)
	WorkDir(ctx context.Context, req runtimeclient.WorkDirRequest) (runtimeclient.WorkDirResult, error)
	RunStream(ctx context.Context, req runtimeclient.CommandRequest, onOutput func(string)) (runtimeclient.CommandResult, error)
	ConfigureMCP(ctx context.Context, conversationID string, req runtimeclient.MCPConfigureRequest) (mcp.State, error)
	CallMCP(ctx context.Context, conversationID, server, tool string, args json.RawMessage) (mcp.CallResult, error)
	MCPChanges(ctx context.Context, conversationID string, since uint64) (st mcp.State, changed bool, err error)
}

// AgentOptions tune the agent loop for every conversation (tests shorten them).
type AgentOptions struct {
	// MaxIterations is the default limit of model calls per run (the user's max_iterations
	// setting wins); 0 means agent.DefaultMaxIterations.
	MaxIterations         int
	CondenserMaxEvents    int
	CondenserKeepFirst    int
	DisableStuckDetection bool
}

// loop is one running agent loop.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
	pause  atomic.Bool
	// interrupt cancels the agent run in progress with a cause (agent.ErrPaused), so that a
	// pause does not wait for the model or tool call in flight; nil between runs. Guarded by
	// Service.mu.
	interrupt context.CancelCauseFunc
	// rearm asks the loop to run the agent once more when it would stop: a message arrived
	// while it was finishing. Guarded by Service.mu.
	rearm bool
}

// startLoop starts the conversation's loop unless one runs; then it asks the running one
// to look again before it stops (rearm) and withdraws a pause it was asked for (a pause that
// already interrupted the run is recorded, and the agent then runs again). It reports
// whether a loop was started: none starts while the service closes or the conversation is
// being deleted.
func (s *Service) startLoop(ownerID, convID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.loops[convID]; ok {
		// Asked to run again: a pause requested meanwhile is withdrawn.
		l.rearm = true
		l.pause.Store(false)
		return false
	}
	if s.ctx.Err() != nil || s.deleting[convID] > 0 {
		return false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	l := &loop{cancel: cancel, done: make(chan struct{})}
	s.loops[convID] = l
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(l.done)
		defer cancel()
		for {
			s.runAgent(ctx, ownerID, convID, l)
			s.mu.Lock()
			again := l.rearm && ctx.Err() == nil && !l.pause.Load()
			l.rearm = false
			if !again {
				delete(s.loops, convID)
				s.settling++
			}
			idle := !again && s.idleLocked()
			s.mu.Unlock()
			if idle {
				s.o.OnIdle()
			}
			if !again {
				s.settled(convID)
				return
			}
		}
	}()
	return true
}

// running returns the conversation's loop, if one runs.
func (s *Service) running(convID string) *loop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[convID]
}

// stopLoop cancels the conversation's loop and waits for it to end.
func (s *Service) stopLoop(convID string) {
	if l := s.running(convID); l != nil {
		l.cancel()
		<-l.done
	}
}

// requestOptions are the parts of a stored creation request the agent needs.
type requestOptions struct {
	ConversationInstructions *string `json:"conversation_instructions"`
	SystemMessageSuffix      *string `json:"system_message_suffix"`
	ReplayJSON               *string `json:"replay_json"`
}

// runAgent runs the agent of one conversation once.
func (s *Service) runAgent(ctx context.Context, ownerID, convID string, l *loop) {
	log := s.log.With("conversation_id", convID)
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		logRunErr(ctx, log, "agent: read conversation", err)
		return
	}
	if v.SandboxID != "" {
		log = log.With("sandbox_id", v.SandboxID)
	}
	// What the loop's collaborators log with ctx names the conversation and its sandbox too.
	ctx = logctx.With(ctx, slog.String("conversation_id", convID), slog.String("sandbox_id", v.SandboxID))
	var req requestOptions
	if len(v.RequestSealed) > 0 {
		raw, err := s.o.Sealer.Open(v.RequestSealed)
		if err != nil {
			log.Error("agent: open stored request", "err", err)
			return
		}
		_ = json.Unmarshal(raw, &req) // validated when stored; V1 requests have no replay
	}
	cfg := agent.Config{
		MaxIterations:         s.o.Agent.MaxIterations,
		CondenserMaxEvents:    s.o.Agent.CondenserMaxEvents,
		CondenserKeepFirst:    s.o.Agent.CondenserKeepFirst,
		DisableStuckDetection: s.o.Agent.DisableStuckDetection,
	}
	if req.ConversationInstructions != nil {
		cfg.Instructions = *req.ConversationInstructions
	}
	if suffix := deref(req.SystemMessageSuffix); suffix != "" {
		// OpenHands appends the suffix to the system message; agentd's instructions are the
		// place where the system prompt takes the client's words.
		cfg.Instructions = strings.TrimSpace(cfg.Instructions + "\n\n" + suffix)
	}
	if req.ReplayJSON != nil {
		r, err := agent.ParseReplay(*req.ReplayJSON)
		if err != nil {
			log.Error("agent: stored replay does not parse", "err", err)
		}
		cfg.Replay = r.Actions
	}
	if v.SandboxID != "" {
		// A working agent keeps its sandbox awake, model calls included.
		release := s.o.Sandboxes.Hold(v.SandboxID)
		defer release()
		if sb, err := s.o.Sandboxes.Get(ctx, ownerID, v.SandboxID); err == nil && sb.Instance.Workspace != "" {
			cfg.Workspace = workspaceOf(v.Conversation, sb.Instance.Workspace)
		}
	}

	var client llm.Client
	llmCfg, tuning, err := s.resolveLLM(ctx, ownerID, v.LLMModel)
	switch {
	case errors.Is(err, ErrNoLLM):
		// The agent says so in the log when it needs the model; a replay does not.
	case err != nil:
		logRunErr(ctx, log, "agent: resolve LLM", err)
		return
	default:
		cfg.Model = llmCfg.Resolve().Model
		c, err := s.o.NewLLM(llmCfg)
		if err != nil {
			// Settings the adapter refuses (a base URL that is no URL): every call fails with
			// the adapter's reason, which the user then reads in the error event.
			log.Warn("agent: LLM client", "err", err)
			client = unusableLLM{err}
		} else {
			policy := s.o.Retry
			policy.OnRetry = func(attempt int, err error, wait time.Duration) {
				log.Info("LLM call failed; retrying", "attempt", attempt, "err", err, "wait", wait)
			}
			client = llm.WithRetry(c, policy)
		}
	}
	if tuning.MaxIterations != nil && *tuning.MaxIterations > 0 {
		cfg.MaxIterations = *tuning.MaxIterations
	}
	if tuning.CondenserMaxSize != nil && *tuning.CondenserMaxSize > 0 {
		cfg.CondenserMaxEvents = *tuning.CondenserMaxSize
	}
	if tuning.EnableDefaultCondenser != nil && !*tuning.EnableDefaultCondenser {
		cfg.CondenserMaxEvents = -1
	}
	if tuning.MaxBudgetPerTask != nil {
		cfg.MaxBudget = *tuning.MaxBudgetPerTask
	}
	cfg.Skills = s.skillsOf(ctx, convID)
	provider := s.providerTools(ctx, v.Conversation)
	if provider != nil {
		cfg.Tools = provider.Tools()
	}
	// The MCP tools' names must not collide with the built-in tools' nor the provider's.
	own := cfg.Tools
	taken := func(name string) bool {
		if _, ok := tool.Lookup(name); ok {
			return true
		}
		return slices.ContainsFunc(own, func(t tool.Tool) bool { return t.Name == name })
	}
	mcpTools := s.startMCP(ctx, v.Conversation, cfg.Skills, taken)
	cfg.Tools = append(slices.Clip(own), mcpTools.Tools()...)
	if repo := deref(v.SelectedRepository); repo != "" && cfg.Workspace != "" {
		// Where the start's PREPARING_REPOSITORY step cloned it (see resolveRepository).
		cfg.Repository = agent.Repository{Name: repo, Dir: path.Join(cfg.Workspace, path.Base(repo)), Branch: deref(v.SelectedBranch)}
		if provider != nil {
			cfg.Repository.Request = provider.Words().Request
		}
	}

	secrets, err := s.Secrets(ctx, v.Conversation)
	if err != nil {
		logRunErr(ctx, log, "agent: read the conversation's secrets", err)
		return
	}
	for _, sec := range secrets {
		cfg.Secrets = append(cfg.Secrets, agent.SecretInfo{Name: sec.Name, Description: sec.Description})
	}

	// Shared with the title call, which runs beside the agent.
	metrics, release := s.acquireMetrics(ownerID, convID, v.Metrics)
	defer release()
	s.nameConversation(ownerID, v, client, cfg.Model)
	a := agent.New(agent.Options{
		Config: cfg, LLM: client, Metrics: metrics, Logger: log,
		Tools: conversationTools{provider: provider,
			mcp:     mcpTools,
			sandbox: &sandboxTools{s: s, conv: v.Conversation, dir: cfg.Workspace}},
		// The MCP servers' tools as they are before each model call.
		UpdateTools: func(ctx context.Context) ([]tool.Tool, bool) {
			if !mcpTools.refresh(ctx) {
				return nil, false
			}
			return append(slices.Clip(own), mcpTools.Tools()...), true
		},
		Log:            &runnerLog{s: s, conv: v.Conversation},
		PauseRequested: l.pause.Load,
		Observer:       s.o.AgentObserver,
		Now:            s.o.Now, NewID: s.o.NewEventID,
	})
	runCtx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	s.mu.Lock()
	l.interrupt = interrupt
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		l.interrupt = nil
		s.mu.Unlock()
	}()
	status, err := a.Run(runCtx)
	if err != nil {
		logRunErr(ctx, log, "agent run", err, "status", string(status))
	}
}

// logRunErr logs an error of an agent run or of its set-up, unless the run was stopped (ctx
// ended: the conversation was paused or deleted, or the server stops) or the conversation is
// gone (deleted while the run began, perhaps by another replica): those are no fault.
func logRunErr(ctx context.Context, log *slog.Logger, msg string, err error, args ...any) {
	if ctx.Err() != nil || errors.Is(err, ErrNotFound) {
		return
	}
	log.ErrorContext(ctx, msg, append(args, "err", err)...)
}

// runnerLog is the agent's view of the conversation's event log: appends are stored with
// the state they carry, then published.
type runnerLog struct {
	s    *Service
	conv Conversation
}

func (l *runnerLog) Load(ctx context.Context, afterSeq int64) ([]event.Event, error) {
	return l.s.o.Events.ConversationEvents(ctx, l.conv.ID, afterSeq)
}

// Append records as the holder of the conversation's lease: once another replica took it,
// the append fails (ErrLeaseLost) and the run ends.
func (l *runnerLog) Append(ctx context.Context, evs []event.Event) (int64, error) {
	return l.s.recordAs(ctx, l.conv, evs, l.s.o.Replica)
}

// record masks the conversation's secrets in events, stores them, applying the state updates
// among them to the conversation in the same transaction, then publishes them.
func (s *Service) record(ctx context.Context, c Conversation, evs []event.Event) error {
	_, err := s.recordWith(ctx, c, evs, StateUpdate{})
	return err
}

// recordIf records evs only if the agent's status is still status (StateUpdate.IfStatus).
func (s *Service) recordIf(ctx context.Context, c Conversation, evs []event.Event, status *string) error {
	_, err := s.recordWith(ctx, c, evs, StateUpdate{IfStatus: status})
	return err
}

// recordAs is record that also returns the Seq of the log's last event before evs
// (Store.RecordEvents); with holder set, it records only while holder has the
// conversation's lease (StateUpdate.Holder).
func (s *Service) recordAs(ctx context.Context, c Conversation, evs []event.Event, holder string) (prev int64, err error) {
	return s.recordWith(ctx, c, evs, StateUpdate{Holder: holder})
}

// maxRedactAttempts bounds the records of one append that find the owner's secrets changed
// since the events were masked (ErrSecretsRevised).
const maxRedactAttempts = 3

// recordWith records evs with the conditions of cond (Holder, IfStatus), and its Task and
// SandboxID.
func (s *Service) recordWith(ctx context.Context, c Conversation, evs []event.Event, cond StateUpdate) (prev int64, err error) {
	rev, err := s.redactAt(ctx, c, evs, false)
	if err != nil {
		return 0, fmt.Errorf("record events: %w", err)
	}
	u := StateUpdate{UpdatedAt: s.o.Now().UTC(), Holder: cond.Holder, IfStatus: cond.IfStatus,
		IfSecretsRevision: &rev, Task: cond.Task, SandboxID: cond.SandboxID}
	for _, e := range evs {
		if e.Kind != event.KindStateUpdate {
			continue
		}
		var su event.StateUpdateEvent
		if err := json.Unmarshal(e.Body, &su); err != nil {
			return 0, fmt.Errorf("record events: %w", err)
		}
		switch su.Key {
		case event.StateExecutionStatus:
			var st string
			if json.Unmarshal(su.Value, &st) == nil {
				u.ExecutionStatus = st
			}
		case event.StateStats:
			var stats struct {
				UsageToMetrics map[string]json.RawMessage `json:"usage_to_metrics"`
			}
			if json.Unmarshal(su.Value, &stats) == nil && len(stats.UsageToMetrics["default"]) > 0 {
				u.Metrics = stats.UsageToMetrics["default"]
			}
		case event.StateConfirmationPolicy:
			var p confirm.Policy
			if err := json.Unmarshal(su.Value, &p); err != nil {
				return 0, fmt.Errorf("record events: %w", err)
			}
			u.ConfirmationPolicy = &p
		case event.StateWaitingForNode:
			var node *string
			if err := json.Unmarshal(su.Value, &node); err != nil {
				return 0, fmt.Errorf("record events: %w", err)
			}
			u.WaitingForNode = new(string)
			if node != nil {
				*u.WaitingForNode = *node
			}
		}
	}
	store := func() error {
		for attempt := 1; ; attempt++ {
			prev, err = s.o.Store.RecordEvents(ctx, c.ID, evs, u)
			if !errors.Is(err, ErrSecretsRevised) {
				return err
			}
			// The owner's secrets changed since evs were masked: mask them with the new ones
			// and record again. The last attempt records them as the other records do, masked
			// for the revision read just before, so that secrets changed again and again
			// cannot keep the agent from recording.
			now, merr := s.redactAt(ctx, c, evs, true)
			if merr != nil {
				return merr
			}
			u.IfSecretsRevision = &now
			if attempt+1 == maxRedactAttempts {
				u.IfSecretsRevision = nil
			}
		}
	}
	if err := s.o.Bus.Record(c.ID, store, evs); err != nil {
		return 0, err
	}
	if u.ExecutionStatus != "" {
		s.notifyRecorded(ctx, c, evs)
	}
	return prev, nil
}

// sandboxTools runs sandbox tools in the conversation's sandbox. While the sandbox is paused
// a call waits for it to be resumed; a call in flight when it is paused stays blocked in
// the frozen runtime and completes after the resume.
//
// The terminal's commands get the conversation's secrets as environment variables, read for
// every call: a value changed, or a secret given, meanwhile reaches the next command.
type sandboxTools struct {
	s    *Service
	conv Conversation
	// dir is the conversation's working directory in the sandbox ("": the workspace).
	dir string
}

func (t *sandboxTools) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	ownerID, sandboxID := t.conv.OwnerID, t.conv.SandboxID
	if sandboxID == "" || t.s.o.Runtimes == nil {
		return tool.Result{}, fmt.Errorf("%w: the conversation has no sandbox", agent.ErrUnavailable)
	}
	if _, err := t.s.o.Sandboxes.WaitRunning(ctx, ownerID, sandboxID); err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Result{}, fmt.Errorf("%w: %v", agent.ErrUnavailable, sandboxProblem(err))
	}
	rt, err := t.s.o.Runtimes(ctx, ownerID, sandboxID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("reach the sandbox: %w", err)
	}
	// A conversation on a repository keeps its sandbox's git channel open (after a restart of
	// agentd, from the first tool call on).
	if deref(t.conv.SelectedRepository) != "" && t.s.o.Git != nil {
		t.s.o.Git.Keep(ownerID, sandboxID)
	}
	req := runtimeclient.ToolRequest{ConversationID: t.conv.ID, Arguments: args, WorkingDir: t.dir}
	if name == tool.Terminal {
		req.Terminal = t.s.o.Terminal
		secrets, err := t.s.currentSecrets(ctx, t.conv)
		if err != nil {
			return tool.Result{}, err
		}
		for _, sec := range secrets {
			if req.Env == nil {
				req.Env = map[string]string{}
			}
			req.Env[sec.Name] = sec.Value
		}
	}
	return rt.RunTool(ctx, name, req)
}

// Interrupt stops the command the conversation's terminal runs for a call its agent gave up on
// when it was paused. A sandbox that is not running has no such command.
func (t *sandboxTools) Interrupt(ctx context.Context) (tool.Result, bool, error) {
	ownerID, sandboxID := t.conv.OwnerID, t.conv.SandboxID
	if sandboxID == "" || t.s.o.Runtimes == nil {
		return tool.Result{}, false, nil
	}
	if sb, err := t.s.o.Sandboxes.Get(ctx, ownerID, sandboxID); err != nil || sb.Status != sandbox.StatusRunning {
		return tool.Result{}, false, err
	}
	rt, err := t.s.o.Runtimes(ctx, ownerID, sandboxID)
	if err != nil {
		return tool.Result{}, false, fmt.Errorf("reach the sandbox: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, interruptTimeout)
	defer cancel()
	return rt.InterruptTool(ctx, t.conv.ID)
}

// interruptTimeout bounds a pause's wait for the command it stops: the runtime gives the
// command ten seconds to end at C-c, then ends its terminal session.
const interruptTimeout = 30 * time.Second

// unanswered words a call the sandbox's runtime did not answer for the agent's error event,
// which the user and the model read: without the transport's error, which names the
// runtime's socket on the host (that goes to the log). The sandbox service looks at the
// sandbox first: when its runtime is gone the sandbox is ERROR from now on, and the run ends
// saying so. Other errors pass as they are.
func (t *sandboxTools) unanswered(ctx context.Context, err error) error {
	if !errors.Is(err, runtimeclient.ErrNoAnswer) || ctx.Err() != nil {
		return err
	}
	t.s.log.WarnContext(ctx, "agent: the sandbox's runtime did not answer", "conversation_id", t.conv.ID,
		"sandbox_id", t.conv.SandboxID, "err", err)
	lost := t.s.o.Sandboxes.CheckRuntime(ctx, t.conv.OwnerID, t.conv.SandboxID)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(lost, sandbox.ErrState):
		return fmt.Errorf("%w: %s", agent.ErrUnavailable, sandboxProblem(lost))
	case lost != nil:
		t.s.log.ErrorContext(ctx, "agent: check the sandbox's runtime", "sandbox_id", t.conv.SandboxID, "err", lost)
	}
	return runtimeclient.ErrNoAnswer
}

// sandboxProblem words a sandbox failure for the user.
func sandboxProblem(err error) string {
	var cm interface{ ClientMessage() string }
	if errors.As(err, &cm) {
		return cm.ClientMessage()
	}
	return "the sandbox is gone"
}

// unusableLLM answers every call with the reason its settings were refused.
type unusableLLM struct{ err error }

func (u unusableLLM) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Msg: "the LLM settings are not usable: " + u.err.Error()}
}
