package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// seedConversations creates n V1 conversations in sandbox sandboxID through the API, from
// clients concurrent clients, and waits until every start task is READY. It returns when the
// last create was answered and when the last task was READY, both counted from its start.
func (s *server) seedConversations(ctx context.Context, sandboxID string, n, clients int) (created, ready time.Duration, err error) {
	body := map[string]any{
		"sandbox_id":      sandboxID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "hi"}}},
	}
	taskIDs := make([]string, n)
	var next atomic.Int64
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && cctx.Err() == nil; i = int(next.Add(1)) - 1 {
				id, err := s.startConversation(cctx, body)
				if err != nil {
					cancel(err)
					return
				}
				taskIDs[i] = id
			}
		})
	}
	wg.Wait()
	created = time.Since(start)
	if err := context.Cause(cctx); err != nil {
		return 0, 0, fmt.Errorf("create conversations: %w", err)
	}
	if _, err := s.waitTasksReady(ctx, taskIDs); err != nil {
		return 0, 0, err
	}
	return created, time.Since(start), nil
}

// readyTimeout bounds the wait for the start tasks; each one waits for a sandbox that is
// already running, so they finish within seconds.
const readyTimeout = 2 * time.Minute

// waitTasksReady polls the start tasks, 100 at a time, until all are READY, and returns their
// conversations' ids in the order of ids. A task in ERROR ends the wait with its detail.
func (s *server) waitTasksReady(ctx context.Context, ids []string) ([]string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, readyTimeout, fmt.Errorf("start tasks not READY after %v", readyTimeout))
	defer cancel()
	convs := make(map[string]string, len(ids))
	pending := slices.Clone(ids)
	for len(pending) > 0 {
		var still []string
		for chunk := range slices.Chunk(pending, 100) {
			var tasks []*struct {
				ID                string  `json:"id"`
				Status            string  `json:"status"`
				Detail            *string `json:"detail"`
				AppConversationID string  `json:"app_conversation_id"`
			}
			if err := s.call(ctx, "GET", "/api/v1/app-conversations/start-tasks?"+url.Values{"ids": chunk}.Encode(), nil, &tasks); err != nil {
				return nil, err
			}
			for i, t := range tasks {
				switch {
				case t == nil:
					return nil, fmt.Errorf("start task %s: not found", chunk[i])
				case t.Status == "ERROR":
					return nil, fmt.Errorf("start task %s: ERROR: %s", t.ID, deref(t.Detail))
				case t.Status != "READY":
					still = append(still, t.ID)
				default:
					convs[t.ID] = t.AppConversationID
				}
			}
		}
		pending = still
		if len(pending) > 0 {
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = convs[id]
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
