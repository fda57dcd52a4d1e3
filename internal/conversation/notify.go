package conversation

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/webhook"
)

// Notifier is told of the transitions of conversations (for webhooks). Notify returns
// quickly, never on the network, and never fails its caller.
type Notifier interface {
	Notify(ctx context.Context, ev webhook.Event)
}

// notify tells the notifier about one of the conversation's transitions.
func (s *Service) notify(ctx context.Context, kind string, c Conversation, data map[string]any) {
	if s.o.Webhooks == nil {
		return
	}
	s.o.Webhooks.Notify(ctx, webhook.Event{Kind: kind, OwnerID: c.OwnerID, ConversationIDs: []string{c.ID},
		SandboxID: c.SandboxID, At: s.o.Now(), Data: data})
}

// notifyRecorded tells the notifier about the execution status changes among events just
// recorded: each is a status change, and finished, waiting and error are told as such too.
func (s *Service) notifyRecorded(ctx context.Context, c Conversation, evs []event.Event) {
	if s.o.Webhooks == nil {
		return
	}
	var errCode, errDetail string
	for _, e := range evs {
		if e.Kind != event.KindConversationError {
			continue
		}
		var ce event.ConversationErrorEvent
		if json.Unmarshal(e.Body, &ce) == nil {
			errCode, errDetail = ce.Code, ce.Detail
		}
	}
	for _, e := range evs {
		if e.Kind != event.KindStateUpdate {
			continue
		}
		var su event.StateUpdateEvent
		var status string
		if json.Unmarshal(e.Body, &su) != nil || su.Key != event.StateExecutionStatus || json.Unmarshal(su.Value, &status) != nil {
			continue
		}
		s.notify(ctx, webhook.KindConversationStatusChanged, c, map[string]any{"execution_status": status})
		switch status {
		case "finished":
			final, err := s.FinalResponse(ctx, c.OwnerID, c.ID)
			if err != nil {
				s.log.Warn("webhook: final response", "conversation_id", c.ID, "err", err)
			}
			s.notify(ctx, webhook.KindConversationFinished, c, map[string]any{"execution_status": status, "final_message": final})
		case "waiting_for_confirmation", "idle":
			s.notify(ctx, webhook.KindConversationWaiting, c, map[string]any{"execution_status": status})
		case "error", "stuck":
			s.notify(ctx, webhook.KindConversationError, c, map[string]any{"execution_status": status, "code": errCode, "detail": errDetail})
		}
	}
}
