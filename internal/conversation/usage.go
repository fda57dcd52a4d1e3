package conversation

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
)

// A conversation's usage while model calls are under way. The agent loop counts its calls in
// a Metrics and records it in stats events, which the conversation's row copies; a call made
// beside the agent (the title) counts in the same Metrics, so that neither overwrites what
// the other counted. The Metrics lives while anyone holds it; the last to let go records a
// stats event if calls beside the agent were counted after the agent's last one.

// liveMetrics is one conversation's shared Metrics.
type liveMetrics struct {
	m    *llm.Metrics
	refs int
	// beside is set once a call beside the agent was counted.
	beside bool
}

// acquireMetrics returns the conversation's live Metrics, made from its stored metrics if
// nobody holds one (read again: a Metrics let go just now may have recorded more than read
// is), and the function that lets it go.
func (s *Service) acquireMetrics(ownerID, convID string, read json.RawMessage) (*llm.Metrics, func()) {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	lm := s.live[convID]
	if lm == nil {
		if v, err := s.o.Store.GetConversation(context.WithoutCancel(s.ctx), ownerID, convID); err == nil {
			read = v.Metrics
		}
		m := &llm.Metrics{}
		if len(read) > 0 {
			var snap llm.MetricsSnapshot
			if json.Unmarshal(read, &snap) == nil {
				m = llm.NewMetricsFrom(snap)
			}
		}
		lm = &liveMetrics{m: m}
		s.live[convID] = lm
	}
	lm.refs++
	return lm.m, func() { s.releaseMetrics(ownerID, convID, lm) }
}

// countedBeside notes that a call beside the agent was counted in the conversation's live
// Metrics.
func (s *Service) countedBeside(convID string) {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	if lm := s.live[convID]; lm != nil {
		lm.beside = true
	}
}

func (s *Service) releaseMetrics(ownerID, convID string, lm *liveMetrics) {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	if lm.refs--; lm.refs > 0 {
		return
	}
	delete(s.live, convID)
	if !lm.beside {
		return
	}
	// Still under the lock: nobody makes a new Metrics from the row before it is written.
	ctx := context.WithoutCancel(s.ctx)
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return // deleted meanwhile
	}
	cur := lm.m.Snapshot()
	var stored llm.MetricsSnapshot
	if len(v.Metrics) > 0 && json.Unmarshal(v.Metrics, &stored) == nil && reflect.DeepEqual(stored, cur) {
		return
	}
	ev, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateStats, map[string]any{
		"usage_to_metrics": map[string]any{"default": cur},
	})
	if err == nil {
		ev.ConversationID = convID
		err = s.record(ctx, v.Conversation, []event.Event{ev})
	}
	if err != nil {
		s.log.Warn("record the usage of calls beside the agent", "conversation_id", convID, "err", err)
	}
}
