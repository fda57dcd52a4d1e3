package conversation

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/event"
)

// SandboxIdlePaused records, on every conversation that uses the sandbox, that agentd paused
// it for being idle. Resuming the sandbox wakes them again.
func (s *Service) SandboxIdlePaused(ctx context.Context, ownerID, sandboxID string, idle time.Duration) error {
	reason := fmt.Sprintf("the sandbox was idle for %v and was paused; resume it to continue", idle.Round(time.Second))
	err := s.eachOfSandbox(ctx, ownerID, sandboxID, func(v View) error {
		ev, err := event.New(s.o.NewEventID(), s.o.Now(), event.SourceEnvironment,
			&event.SandboxPausedEvent{SandboxID: sandboxID, Reason: reason})
		if err != nil {
			return err
		}
		return s.record(ctx, v.Conversation, []event.Event{ev})
	})
	if err != nil {
		return fmt.Errorf("record idle pause of sandbox %s: %w", sandboxID, err)
	}
	return nil
}
