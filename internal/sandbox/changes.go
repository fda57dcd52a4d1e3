package sandbox

import (
	"context"
	"sync"
)

// followChanges has the sandboxes a Watcher backend tells of checked as the watcher's passes
// check them (markGone): a RUNNING or PAUSED sandbox whose processes are gone becomes MISSING
// at once, not at the next pass. Only while this replica reconciles the backend's sandboxes
// (a remote backend's: one replica at a time); the others let the news go. Ids told while a
// check runs are gathered and checked once each after it. Both goroutines stop with ctx.
func (s *Service) followChanges(ctx context.Context, w Watcher) {
	var (
		mu      sync.Mutex
		pending = map[string]bool{}
		kick    = make(chan struct{}, 1)
	)
	s.spawn(func() {
		if err := w.WatchChanges(ctx, func(id string) {
			mu.Lock()
			pending[id] = true
			mu.Unlock()
			select {
			case kick <- struct{}{}:
			default:
			}
		}); err != nil && ctx.Err() == nil {
			s.log.Error("watch the backend's sandboxes", "err", err)
		}
	})
	s.spawn(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			mu.Lock()
			ids := pending
			pending = map[string]bool{}
			mu.Unlock()
			if !s.leading.Load() {
				continue
			}
			for id := range ids {
				if err := s.markGone(ctx, id); err != nil && ctx.Err() == nil {
					s.log.Error("check a sandbox the backend told of", "sandbox_id", id, "err", err)
				}
			}
		}
	})
}
