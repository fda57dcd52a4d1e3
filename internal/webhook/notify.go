package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// payload is the JSON body of a delivery.
type payload struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	WebhookID string         `json:"webhook_id"`
	CreatedAt time.Time      `json:"created_at"`
	Data      map[string]any `json:"data"`
}

// Notify records a delivery of ev for each of its owner's webhooks that wants it, and wakes
// the dispatcher. It never blocks on the network and never fails its caller: a problem is
// logged. The services that own the transitions call it.
func (s *Service) Notify(ctx context.Context, ev Event) {
	ctx = context.WithoutCancel(ctx)
	if err := s.notify(ctx, ev); err != nil {
		s.log.Error("webhook: record deliveries", "kind", ev.Kind, "err", err)
	}
}

func (s *Service) notify(ctx context.Context, ev Event) error {
	hooks, err := s.o.Store.ListWebhooks(ctx, ev.OwnerID)
	if err != nil || len(hooks) == 0 {
		return err
	}
	if ev.At.IsZero() {
		ev.At = s.o.Now()
	}
	data := map[string]any{}
	for k, v := range ev.Data {
		data[k] = v
	}
	if ev.SandboxID != "" {
		data["sandbox_id"] = ev.SandboxID
	}
	if strings.HasPrefix(ev.Kind, "sandbox.") {
		if s.o.SandboxConversations != nil {
			ids, err := s.o.SandboxConversations(ctx, ev.OwnerID, ev.SandboxID)
			if err != nil {
				return fmt.Errorf("conversations of sandbox %s: %w", ev.SandboxID, err)
			}
			ev.ConversationIDs = ids
		}
		if ev.ConversationIDs == nil {
			ev.ConversationIDs = []string{}
		}
		data["conversation_ids"] = ev.ConversationIDs
	} else if len(ev.ConversationIDs) == 1 {
		data["conversation_id"] = ev.ConversationIDs[0]
	}
	now := s.o.Now().UTC()
	var ds []Delivery
	for _, w := range hooks {
		if !w.Wants(ev) {
			continue
		}
		d := Delivery{ID: s.o.NewID(), WebhookID: w.ID, OwnerID: ev.OwnerID, Kind: ev.Kind, Endpoint: EndpointOf(w.URL),
			Status: StatusPending, CreatedAt: now, UpdatedAt: now, NextAttemptAt: now, RetryUntil: now.Add(s.o.RetryFor)}
		body, err := json.Marshal(payload{ID: d.ID, Event: ev.Kind, WebhookID: w.ID, CreatedAt: ev.At.UTC(), Data: data})
		if err != nil {
			return fmt.Errorf("encode %s: %w", ev.Kind, err)
		}
		d.Payload = body
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return nil
	}
	if err := s.o.Store.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	s.poke()
	return nil
}
