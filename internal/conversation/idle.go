package conversation

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// SandboxIdlePaused records, on every conversation that uses the sandbox, that agentd paused
// it for being idle. Resuming the sandbox wakes them again.
func (s *Service) SandboxIdlePaused(ctx context.Context, ownerID, sandboxID string, idle time.Duration) error {
	f := Filter{SandboxID: sandboxID, IncludeSub: true}
	reason := fmt.Sprintf("the sandbox was idle for %v and was paused; resume it to continue", idle.Round(time.Second))
	for q := (paging.Query{Limit: paging.MaxLimit}); ; {
		vs, next, err := s.o.Store.ListConversations(ctx, ownerID, f, q)
		if err != nil {
			return fmt.Errorf("record idle pause of sandbox %s: %w", sandboxID, err)
		}
		for _, v := range vs {
			ev, err := event.New(s.o.NewEventID(), s.o.Now(), event.SourceEnvironment,
				&event.SandboxPausedEvent{SandboxID: sandboxID, Reason: reason})
			if err != nil {
				return err
			}
			if err := s.record(ctx, v.Conversation, []event.Event{ev}); err != nil {
				return fmt.Errorf("record idle pause on conversation %s: %w", v.ID, err)
			}
		}
		if next == "" {
			return nil
		}
		q.Cursor = next
	}
}
