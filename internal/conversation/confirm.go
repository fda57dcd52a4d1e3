package conversation

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/agent"
	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/settings"
)

// Confirmation mode: a conversation's confirmation policy is chosen when it is created (the
// start request's, else its parent's, else the one the owner's settings choose) and may be
// changed while it runs; it lives in the event log as a confirmation_policy state update, which
// the agent reads and the store copies onto the conversation. Actions that must wait leave the
// agent in waiting_for_confirmation (see package agent): accepting runs the agent, which runs
// them; rejecting, sending a message, or pausing records a UserRejectObservation for each.

// ErrNotWaiting: no action of the conversation waits for the user's confirmation.
var ErrNotWaiting = errors.New("no action is waiting for confirmation")

// pauseRejection is the reason recorded for the actions a pause leaves unconfirmed: a pause
// never runs what the user was asked about.
const pauseRejection = "The user paused the agent instead of confirming this action."

// confirmationPolicy is the policy a new conversation starts with.
func (s *Service) confirmationPolicy(ctx context.Context, ownerID string, requested *confirm.Policy, parent *View) (confirm.Policy, error) {
	switch {
	case requested != nil:
		return *requested, nil
	case parent != nil:
		return parent.ConfirmationPolicy, nil
	case s.o.Settings == nil:
		return confirm.Never, nil
	}
	v, err := s.o.Settings.Get(ctx, ownerID)
	if errors.Is(err, settings.ErrNotFound) {
		return confirm.Never, nil
	}
	if err != nil {
		return confirm.Policy{}, fmt.Errorf("read confirmation settings: %w", err)
	}
	return confirm.FromSettings(v.Settings.ConfirmationMode, v.Settings.SecurityAnalyzer), nil
}

// SetConfirmationPolicy changes the conversation's policy; the agent follows it from its next
// step. Actions waiting already keep waiting.
func (s *Service) SetConfirmationPolicy(ctx context.Context, ownerID, convID string, p confirm.Policy) error {
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	ev, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateConfirmationPolicy, p)
	if err != nil {
		return err
	}
	if err := s.record(ctx, v.Conversation, []event.Event{ev}); err != nil {
		return fmt.Errorf("set the confirmation policy of conversation %s: %w", convID, err)
	}
	return nil
}

// RespondToConfirmation answers the actions that wait: accepted, the agent runs them and goes
// on; rejected, each is answered with the reason (which the model reads) and the agent goes
// on. ErrNotWaiting when none waits.
func (s *Service) RespondToConfirmation(ctx context.Context, ownerID, convID string, accept bool, reason string) error {
	s.confirmMu.Lock()
	defer s.confirmMu.Unlock()
	v, err := s.ready(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	if agent.Status(v.ExecutionStatus) != agent.StatusWaitingForConfirmation {
		return fmt.Errorf("conversation %s: %w", convID, ErrNotWaiting)
	}
	if !accept {
		evs, err := s.rejectPending(ctx, v.Conversation, reason)
		if err != nil {
			return err
		}
		// Of two answers at once (on two replicas), one is recorded; the other finds nothing
		// waiting any more.
		waiting := string(agent.StatusWaitingForConfirmation)
		err = s.recordIf(ctx, v.Conversation, evs, &waiting)
		if errors.Is(err, ErrStatusChanged) {
			return fmt.Errorf("conversation %s: %w", convID, ErrNotWaiting)
		}
		if err != nil {
			return fmt.Errorf("reject the pending actions of conversation %s: %w", convID, err)
		}
	}
	// Running the agent while actions wait is the confirmation (as in OpenHands); after a
	// rejection it goes on with the model.
	return s.wake(ctx, ownerID, v.Conversation)
}

// rejectPending returns the events that reject the conversation's pending actions with
// reason, and leave the agent idle.
func (s *Service) rejectPending(ctx context.Context, c Conversation, reason string) ([]event.Event, error) {
	log, err := s.o.Events.ConversationEvents(ctx, c.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("read the log of conversation %s: %w", c.ID, err)
	}
	pending, err := agent.PendingActions(log)
	if err != nil {
		return nil, err
	}
	evs, err := agent.Rejections(pending, reason, s.o.NewEventID, s.o.Now())
	if err != nil {
		return nil, err
	}
	st, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateExecutionStatus, agent.StatusIdle)
	if err != nil {
		return nil, err
	}
	return append(evs, st), nil
}
