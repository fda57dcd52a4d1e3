package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/tool"
)

// Confirmation: every action is rated with a security risk; the conversation's policy (a
// confirmation_policy state update in the log) says which risks wait for the user. The
// actions of a response that must wait are recorded with the status waiting_for_confirmation
// and not run: they stay in the log without a result, which is all there is to their being
// pending, so a restart or a paused sandbox keeps them waiting. Running the agent then is the
// user's confirmation (as in OpenHands); the conversation service rejects them by recording
// a UserRejectObservation for each.

// errWaiting ends a step whose actions wait for the user's confirmation.
var errWaiting = errors.New("actions wait for the user's confirmation")

// DefaultRejectionReason is the reason of a rejection given without one, OpenHands' words.
const DefaultRejectionReason = "User rejected the action."

// assess rates a call: the model's rating, HIGH whatever it said for a known-destructive
// call, and LOW for an unrated call of a tool that changes nothing.
func (a *Agent) assess(c call) confirm.Risk {
	r := confirm.ParseRisk(c.rated)
	if c.problem != "" {
		return r
	}
	if why := confirm.Destructive(c.name, c.argsJSON, a.cfg.Workspace); why != "" {
		if r != confirm.High {
			a.log.Info("action raised to HIGH risk", "tool", c.name, "model_rating", string(r), "why", why)
		}
		return confirm.High
	}
	if r == confirm.Unknown && c.tool.ReadOnly {
		return confirm.Low
	}
	return r
}

// mustConfirm reports whether the valid calls of a response wait for the user: one of them
// does under the policy. A finish or a think changes nothing and never waits.
func (a *Agent) mustConfirm(calls []call, risks []confirm.Risk) bool {
	for i, c := range calls {
		if c.problem == "" && c.name != tool.Finish && c.name != tool.Think && a.policy.Needs(risks[i]) {
			return true
		}
	}
	return false
}

// answerPending resolves the actions that wait when the agent is run. A user message recorded
// after them rejects them with its text: it arrived while the loop stopped to wait. Otherwise
// the run is the user's confirmation and they run, in order.
func (a *Agent) answerPending(ctx context.Context) error {
	pending := a.orphans()
	if text, ok := a.pending.messageAfter(); ok {
		evs, err := Rejections(pending, text, a.o.NewID, a.o.Now())
		if err != nil {
			return err
		}
		st, err := a.statusEvent(StatusRunning)
		if err != nil {
			return err
		}
		return a.append(ctx, append(evs, st)...)
	}
	a.log.Info("the user confirmed the pending actions", "actions", len(pending))
	if err := a.setStatus(ctx, StatusRunning); err != nil {
		return err
	}
	for _, act := range pending {
		c := a.tools.parseCall(llm.ToolCall{ID: act.ToolCallID, Name: act.ToolCall.Name, Arguments: act.ToolCall.Arguments})
		if c.problem != "" {
			continue // not pending: its error answered it
		}
		if err := a.execute(ctx, c, act.ID); err != nil {
			return err
		}
	}
	return nil
}

// PendingActions returns the actions of a conversation's log (all of it, in order) that have
// no result: while the conversation waits for confirmation, those that wait.
func PendingActions(evs []event.Event) ([]*event.ActionEvent, error) {
	var p pendingActions
	for _, ev := range evs {
		switch ev.Kind {
		case event.KindAction, event.KindObservation, event.KindAgentError, event.KindUserReject:
		default:
			continue
		}
		body, err := event.Decode(ev)
		if err != nil {
			return nil, err
		}
		p.follow(body)
	}
	return p.actions(), nil
}

// Rejections returns the events that reject the pending actions with the user's reason
// (DefaultRejectionReason when empty), which the model reads in place of their results.
func Rejections(pending []*event.ActionEvent, reason string, newID func() string, now time.Time) ([]event.Event, error) {
	if strings.TrimSpace(reason) == "" {
		reason = DefaultRejectionReason
	}
	var evs []event.Event
	for _, act := range pending {
		ev, err := event.New(newID(), now, event.SourceUser, &event.UserRejectObservation{
			ActionID: act.ID, ToolName: act.ToolName, ToolCallID: act.ToolCallID,
			RejectionReason: reason, RejectionSource: "user",
		})
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}
