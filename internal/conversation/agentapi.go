package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/agent"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/tool"
)

// What clients do with a conversation's agent: send it messages, run it, pause it, and read
// its event log.

// Message is a user message sent into a conversation.
type Message struct {
	Text      string
	ImageURLs []string
}

// ready returns the conversation if its start task is READY (or it has none).
func (s *Service) ready(ctx context.Context, ownerID, convID string) (View, error) {
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return View{}, err
	}
	if v.TaskStatus != "" && v.TaskStatus != TaskReady {
		return v, fmt.Errorf("conversation %s: start task is %s: %w", convID, v.TaskStatus, ErrNotReady)
	}
	return v, nil
}

// SendMessage appends a user message. An agent that had stopped (finished, stuck, error,
// paused) becomes idle; actions waiting for confirmation are rejected with the message as
// the reason, as OpenHands does. With run, the agent runs to answer it (a loop that is
// running already sees it at its next step); without, it waits for run. A message sent while
// the conversation still starts is answered once it is ready.
//
// The message's record is a compare-and-set on the agent's status it was made for: another
// replica that answered the pending actions meanwhile (or the agent that moved on) makes it
// read the conversation again and make the record anew.
func (s *Service) SendMessage(ctx context.Context, ownerID, convID string, m Message, run bool) error {
	s.confirmMu.Lock()
	defer s.confirmMu.Unlock()
	for attempt := 1; ; attempt++ {
		err := s.sendMessage(ctx, ownerID, convID, m, run)
		if !errors.Is(err, ErrStatusChanged) || attempt == maxStatusRetries {
			return err
		}
	}
}

// answerable refuses a message to a conversation whose sandbox failed or is gone, saying why
// (a *sandbox.NotRunningError, with the sandbox's detail): no agent could ever answer it.
func (s *Service) answerable(ctx context.Context, v View) error {
	if v.SandboxID == "" || v.SandboxStatus != sandbox.StatusError && v.SandboxStatus != sandbox.StatusMissing {
		return nil
	}
	sb, err := s.o.Sandboxes.Get(ctx, v.OwnerID, v.SandboxID)
	if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		return err
	}
	return &sandbox.NotRunningError{ID: v.SandboxID, Status: v.SandboxStatus, Detail: sb.Detail}
}

// maxStatusRetries bounds the records made anew after the agent's status changed under them.
const maxStatusRetries = 5

func (s *Service) sendMessage(ctx context.Context, ownerID, convID string, m Message, run bool) error {
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	if err := s.answerable(ctx, v); err != nil {
		return fmt.Errorf("send message to conversation %s: %w", convID, err)
	}
	ev, err := event.NewUserMessage(s.o.NewEventID(), s.o.Now(), m.Text, m.ImageURLs)
	if err != nil {
		return err
	}
	evs := []event.Event{ev}
	from := agent.Status(v.ExecutionStatus)
	if from == agent.StatusWaitingForConfirmation {
		rejections, err := s.rejectPending(ctx, v.Conversation, m.Text)
		if err != nil {
			return err
		}
		evs = append(rejections, evs...)
	}
	// A stopped agent (finished, stuck, failed, paused) becomes idle at once: it has a new
	// message to answer, and a client polling for its status never reads the old one.
	if from.Terminal() || from == agent.StatusPaused {
		st, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateExecutionStatus, agent.StatusIdle)
		if err != nil {
			return err
		}
		evs = append(evs, st)
	}
	status := v.ExecutionStatus
	if err := s.recordIf(ctx, v.Conversation, evs, &status); err != nil {
		return fmt.Errorf("send message to conversation %s: %w", convID, err)
	}
	if run && (v.TaskStatus == "" || v.TaskStatus == TaskReady) {
		return s.wake(ctx, ownerID, v.Conversation)
	}
	return nil
}

// RunAgent starts the agent. ErrAlreadyRunning when it runs; ErrNotReady while the
// conversation starts. An agent with nothing to answer stops again at once.
func (s *Service) RunAgent(ctx context.Context, ownerID, convID string) error {
	v, err := s.ready(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	l := s.loops[convID]
	s.mu.Unlock()
	if l != nil && !l.pause.Load() {
		// The loop may be ending without having read what the caller wants answered (a loop
		// started when the conversation became ready, with nothing to answer then): it looks
		// again once its pass ends, so that the refusal's "it runs" holds.
		if err := s.wake(ctx, ownerID, v.Conversation); err != nil {
			return err
		}
		return fmt.Errorf("run conversation %s: %w", convID, ErrAlreadyRunning)
	}
	if l == nil && agent.Status(v.ExecutionStatus) == agent.StatusRunning {
		if holder, err := s.liveHolder(ctx, convID); err != nil {
			return err
		} else if holder != "" {
			// The same holds for a loop on another replica: a command makes it look again.
			if err := s.command(ctx, convID, CommandRun); err != nil {
				return err
			}
			return fmt.Errorf("run conversation %s: %w", convID, ErrAlreadyRunning)
		}
	}
	// A loop asked to pause runs the agent again once it has recorded the pause.
	return s.wake(ctx, ownerID, v.Conversation)
}

// liveHolder returns the other replica that holds the conversation's lease now, or "".
func (s *Service) liveHolder(ctx context.Context, convID string) (string, error) {
	l, err := s.o.Store.ConversationLease(ctx, convID)
	if err != nil {
		return "", err
	}
	if l.Holder == "" || l.Holder == s.o.Replica || !l.Expires.After(s.o.Now()) {
		return "", nil
	}
	return l.Holder, nil
}

// PauseAgent pauses the agent: a running loop stops at once, abandoning the model call or
// tool call in flight (a tool call is answered with an error saying the pause interrupted
// it; a terminal command it started runs on in the sandbox), and records the pause; an idle
// agent is paused at once, and so is one waiting for confirmation, its actions rejected. A
// finished, stuck or failed agent has nothing to pause: that is no error, as OpenHands'
// agent servers answer (its SDK client fails on any refusal).
//
// The loop of a conversation that another replica runs is paused there: the pause is left as
// a command for it.
func (s *Service) PauseAgent(ctx context.Context, ownerID, convID string) error {
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	if s.pauseLoop(convID) {
		return nil
	}
	if holder, err := s.liveHolder(ctx, convID); err != nil {
		return err
	} else if holder != "" {
		return s.command(ctx, convID, CommandPause)
	}
	return s.pauseStopped(ctx, v)
}

// pauseHere pauses the agent of a conversation whose lease this replica holds (a command).
func (s *Service) pauseHere(ctx context.Context, ownerID, convID string) error {
	if s.pauseLoop(convID) {
		return nil
	}
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	return s.pauseStopped(ctx, v)
}

// pauseStopped records the pause of an agent that no loop runs (pauseStoppedOnce), anew
// when its status changed under the record.
func (s *Service) pauseStopped(ctx context.Context, v View) error {
	for attempt := 1; ; attempt++ {
		err := s.pauseStoppedOnce(ctx, v)
		if !errors.Is(err, ErrStatusChanged) || attempt == maxStatusRetries {
			return err
		}
		if v, err = s.o.Store.GetConversation(ctx, v.OwnerID, v.ID); err != nil {
			return err
		}
	}
}

// pauseLoop asks the conversation's loop, if it runs here, to pause at once, and reports
// whether one runs here.
func (s *Service) pauseLoop(convID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.loops[convID]
	if l == nil {
		return false
	}
	l.pause.Store(true)
	if l.interrupt != nil {
		l.interrupt(agent.ErrPaused)
	}
	return true
}

// pauseStoppedOnce records the pause of an agent that no loop runs: an idle one, one waiting
// for confirmation (its actions rejected), or one whose runner died (its next one finds it
// paused). The record is a compare-and-set on the status it was made for.
func (s *Service) pauseStoppedOnce(ctx context.Context, v View) error {
	convID := v.ID
	from := agent.Status(v.ExecutionStatus)
	switch from {
	case "", agent.StatusIdle, agent.StatusRunning, agent.StatusWaitingForConfirmation:
	default:
		return nil // paused already, or nothing runs
	}
	var evs []event.Event
	if from == agent.StatusWaitingForConfirmation {
		s.confirmMu.Lock()
		defer s.confirmMu.Unlock()
		rejections, err := s.rejectPending(ctx, v.Conversation, pauseRejection)
		if err != nil {
			return err
		}
		evs = rejections[:len(rejections)-1] // without the idle status: it becomes paused
	}
	pause, err := event.New(s.o.NewEventID(), s.o.Now(), event.SourceUser, &event.PauseEvent{})
	if err != nil {
		return err
	}
	st, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateExecutionStatus, agent.StatusPaused)
	if err != nil {
		return err
	}
	status := v.ExecutionStatus
	if err := s.recordIf(ctx, v.Conversation, append(evs, pause, st), &status); err != nil {
		return fmt.Errorf("pause conversation %s: %w", convID, err)
	}
	return nil
}

// AgentRunning reports whether the conversation's agent loop runs in this process.
func (s *Service) AgentRunning(convID string) bool { return s.running(convID) != nil }

// SearchEvents pages through the owner's events.
func (s *Service) SearchEvents(ctx context.Context, ownerID string, f event.Filter, desc bool, q paging.Query) ([]event.Event, string, error) {
	return s.o.Events.SearchEvents(ctx, ownerID, f, desc, q)
}

// CountEvents counts the owner's events that match f.
func (s *Service) CountEvents(ctx context.Context, ownerID string, f event.Filter) (int, error) {
	return s.o.Events.CountEvents(ctx, ownerID, f)
}

// GetEvents returns the owner's events with those ids, nil for unknown ones.
func (s *Service) GetEvents(ctx context.Context, ownerID string, ids []string) ([]*event.Event, error) {
	return s.o.Events.GetEvents(ctx, ownerID, ids)
}

// Subscribe follows the appends to a conversation's log (see event.Bus).
func (s *Service) Subscribe(ctx context.Context, convID string, buffer int) (*event.Subscription, error) {
	return s.o.Bus.Subscribe(ctx, convID, buffer)
}

// NewEvent builds an event with the service's clock and ids without storing it: what a
// stream sends beside the log (the full state it opens with, errors about client frames).
func (s *Service) NewEvent(source string, body event.Body) (event.Event, error) {
	return event.New(s.o.NewEventID(), s.o.Now(), source, body)
}

// finalResponsePage is how many events FinalResponse reads at a time, newest first.
const finalResponsePage = 50

// FinalResponse is the agent's last answer, as OpenHands agent servers give it: the message
// of its last finish call, or the text of its last message, whichever is later; "" when
// it has given none, or when its last finish call was invalid.
func (s *Service) FinalResponse(ctx context.Context, ownerID, convID string) (string, error) {
	f := event.Filter{ConversationID: convID, Source: event.SourceAgent}
	q := paging.Query{Limit: finalResponsePage}
	for {
		evs, next, err := s.o.Events.SearchEvents(ctx, ownerID, f, true, q)
		if err != nil {
			return "", fmt.Errorf("final response of conversation %s: %w", convID, err)
		}
		for _, e := range evs {
			if text, ok := finalResponse(e); ok {
				return text, nil
			}
		}
		if next == "" {
			return "", nil
		}
		q.Cursor = next
	}
}

// finalResponse reports whether e ends the search for the final response, and its text.
func finalResponse(e event.Event) (string, bool) {
	if e.Kind != event.KindAction && e.Kind != event.KindMessage {
		return "", false
	}
	b, err := event.Decode(e)
	if err != nil {
		return "", false
	}
	switch b := b.(type) {
	case *event.ActionEvent:
		if b.ToolName != tool.Finish {
			return "", false
		}
		var finish struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b.Action, &finish) != nil || finish.Kind != "FinishAction" {
			return "", true // an invalid finish call ends the search empty-handed
		}
		return finish.Message, true
	case *event.MessageEvent:
		return strings.Join(b.Texts(), ""), true
	}
	return "", false
}

// IsTransition reports whether err is a refused execution status change.
func IsTransition(err error) bool {
	var te *agent.TransitionError
	return errors.As(err, &te)
}

// AgentInfo is what clients are shown of a conversation's agent.
type AgentInfo struct {
	Model          string
	MaxIterations  int
	StuckDetection bool
	Workspace      string
}

// Agent describes the conversation's agent as its next run would be set up.
func (s *Service) Agent(ctx context.Context, ownerID string, v View) AgentInfo {
	info := AgentInfo{MaxIterations: s.o.Agent.MaxIterations, StuckDetection: !s.o.Agent.DisableStuckDetection}
	if info.MaxIterations <= 0 {
		info.MaxIterations = agent.DefaultMaxIterations
	}
	cfg, tuning, _ := s.resolveLLM(ctx, ownerID, v.LLMModel)
	info.Model = cfg.Resolve().Model
	if tuning.MaxIterations != nil && *tuning.MaxIterations > 0 {
		info.MaxIterations = *tuning.MaxIterations
	}
	if v.SandboxID != "" {
		if sb, err := s.o.Sandboxes.Get(ctx, ownerID, v.SandboxID); err == nil {
			info.Workspace = workspaceOf(v.Conversation, sb.Instance.Workspace)
		}
	}
	return info
}

// Busy reports whether start tasks or agent loops run in the background, or one that ended
// has yet to release its conversation's lease.
func (s *Service) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tasks) > 0 || len(s.loops) > 0 || s.settling > 0
}

// idleLocked reports, with s.mu held, whether an OnIdle is to be told that the service runs
// nothing any more.
func (s *Service) idleLocked() bool {
	return s.o.OnIdle != nil && len(s.tasks) == 0 && len(s.loops) == 0
}
