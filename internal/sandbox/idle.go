package sandbox

import (
	"context"
	"time"
)

// Idle auto-pause: with ServiceOptions.IdleTimeout set, a RUNNING sandbox that nobody used
// for that long is paused by the watcher (Run). "Used" means a runtime client was handed out
// (every tool call and command goes through Client) or someone holds the sandbox (Hold: an
// agent loop holds its sandbox for as long as it runs, model calls included). Nothing else
// is paused behind the user's back: the per-user limit never pauses anything.

// Hold marks the sandbox as in use until release is called. Holds nest; release is safe to
// call twice.
//
// Hold and Client take the sandbox's lock, as pauseIfIdle does from its last look at the
// sandbox's use to the pause: a hold or a use lands either before that look, and the sandbox
// stays awake, or after the pause, and finds it PAUSED; never in between.
func (s *Service) Hold(id string) (release func()) {
	unlock := s.locks.lock(id)
	defer unlock()
	s.mu.Lock()
	s.holds[id]++
	s.lastActive[id] = s.now()
	s.mu.Unlock()
	released := false
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if released {
			return
		}
		released = true
		if s.holds[id]--; s.holds[id] <= 0 {
			delete(s.holds, id)
		}
		s.lastActive[id] = s.now()
	}
}

// idleSince returns when the sandbox was last used: the last touch, else the last status
// change (a sandbox adopted after a restart counts from its last change, not from the epoch).
func (s *Service) idleSince(sb Sandbox) (since time.Time, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds[sb.ID] > 0 {
		return time.Time{}, true
	}
	since = sb.UpdatedAt
	if sb.ActiveAt.After(since) {
		since = sb.ActiveAt // another replica's use
	}
	if t, ok := s.lastActive[sb.ID]; ok && t.After(since) {
		since = t
	}
	return since, false
}

// tellUse tells the store of the use this replica made of a remote backend's sandboxes since
// it last did (those it holds are in use now), so that the replica that pauses idle
// sandboxes, which may be another, knows of it.
func (s *Service) tellUse(ctx context.Context) {
	if !s.caps.Remote {
		return
	}
	now := s.now()
	s.mu.Lock()
	var ids []string
	for id, t := range s.lastActive {
		if s.holds[id] > 0 || t.After(s.toldUse) {
			ids = append(ids, id)
		}
	}
	since := s.toldUse
	s.toldUse = now
	s.mu.Unlock()
	if err := s.store.TouchSandboxes(ctx, ids, now); err != nil {
		s.log.Warn("tell the store of the sandboxes' use", "err", err)
		s.mu.Lock()
		s.toldUse = since // told again at the next pass
		s.mu.Unlock()
	}
}

// pauseIdle pauses RUNNING sandboxes unused for IdleTimeout and reports each to OnIdlePause.
func (s *Service) pauseIdle(ctx context.Context, sbs []Sandbox) {
	if s.idleTimeout <= 0 {
		return
	}
	now := s.now()
	for _, sb := range sbs {
		if sb.Status != StatusRunning || s.ours(sb) != nil {
			continue
		}
		since, held := s.idleSince(sb)
		if held || now.Sub(since) < s.idleTimeout {
			continue
		}
		if err := s.pauseIfIdle(ctx, sb.ID); err != nil {
			s.log.Error("pause idle sandbox", "sandbox_id", sb.ID, "err", err)
		}
	}
}

// pauseIfIdle checks again under the sandbox's lock, then pauses it.
func (s *Service) pauseIfIdle(ctx context.Context, id string) error {
	unlock := s.locks.lock(id)
	sb, err := s.store.GetSandbox(ctx, "", id)
	if err != nil || sb.Status != StatusRunning {
		unlock()
		return nil
	}
	since, held := s.idleSince(sb)
	idle := s.now().Sub(since)
	if held || idle < s.idleTimeout {
		unlock()
		return nil
	}
	paused, err := s.pauseLocked(ctx, sb)
	unlock()
	if err != nil {
		return err
	}
	s.log.Info("paused idle sandbox", "sandbox_id", id, "idle_seconds", int(idle.Seconds()))
	if s.onIdlePause != nil {
		s.onIdlePause(context.WithoutCancel(ctx), paused, idle)
	}
	return nil
}
