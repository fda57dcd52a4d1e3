package sandbox

import (
	"context"
	"time"
)

// Orphans of a remote backend. Every replica starts sandboxes on the backend, and a start
// stores its record before it asks the backend and learns the sandbox's Instance only from its
// answer; another replica's start in flight therefore looks, for a while, like a record with
// no Instance, and whatever a start makes outside agentd's own steps (a sandbox started ahead
// of need, say) like a sandbox without a record. So the replica that reconciles removes a
// remote backend's sandbox only once it has found it without a record for the orphan grace,
// and drops a STARTING record without an Instance only once it is older than the grace and the
// start timeout, which bounds a start. A node-local backend's sandboxes are started on their
// node by this service alone, so its orphans go at once, as at a start-up.

// orphan is what an orphan pass remembers of a sandbox of the backend that has no live record.
type orphan struct {
	seen     time.Time // when a pass first found it without a record
	recorded bool      // its record (ERROR or MISSING) keeps what is left of it until Delete
}

// orphanDue reports whether sandbox id, found without a record now, has been found so for the
// grace, and what to remember of it otherwise.
func (s *Service) orphanDue(id string) (orphan, bool) {
	now := s.now()
	s.mu.Lock()
	m, ok := s.orphans[id]
	s.mu.Unlock()
	if !ok || m.recorded {
		m = orphan{seen: now}
	}
	return m, now.Sub(m.seen) >= s.orphanGrace
}

// setOrphans replaces what the orphan passes remember: a sandbox no longer found is forgotten.
func (s *Service) setOrphans(marks map[string]orphan) {
	s.mu.Lock()
	s.orphans = marks
	s.mu.Unlock()
}

// startAbandoned reports whether a STARTING record without an Instance is of a start nobody
// carries on: of a node-local backend, any (its node's last server did not finish it); of a
// remote backend, one older than the orphan grace and the start timeout.
func (s *Service) startAbandoned(sb Sandbox) bool {
	return !s.caps.Remote || s.now().Sub(sb.CreatedAt) >= max(s.orphanGrace, s.startTimeout)
}

// removeOrphans is the orphan pass of a remote backend's watcher: the backend's sandboxes that
// have none of the live records are destroyed once their grace is over (removeOrphan), and
// abandoned starts' records dropped. A sandbox whose ERROR or MISSING record keeps it is looked
// up once, not at every pass. It costs the backend's List (the kubernetes backend's reads its
// informers' view) and a store read per sandbox without a live record.
func (s *Service) removeOrphans(ctx context.Context, live []Sandbox) {
	insts, err := s.backend.List(ctx)
	if err == nil {
		insts, err = s.withoutMembers(ctx, insts)
	}
	if err != nil {
		s.log.Warn("list the backend's sandboxes for orphans", "err", err)
		return
	}
	known := make(map[string]bool, len(live))
	for _, sb := range live {
		known[sb.ID] = true
	}
	s.mu.Lock()
	prev := s.orphans
	s.mu.Unlock()
	marks := map[string]orphan{}
	for _, inst := range insts {
		if known[inst.ID] {
			continue
		}
		if m := prev[inst.ID]; m.recorded {
			marks[inst.ID] = m
			continue
		}
		m, keep, err := s.removeOrphan(ctx, inst)
		if err != nil {
			s.log.Error("remove orphan sandbox", "sandbox_id", inst.ID, "err", err)
		}
		if keep {
			marks[inst.ID] = m
		}
	}
	s.setOrphans(marks)
	for _, sb := range live {
		if sb.Instance.ID == "" && sb.Status == StatusStarting && sb.Backend == s.backend.Name() && s.startAbandoned(sb) {
			if err := s.reconcileOne(ctx, sb.ID); err != nil {
				s.log.Error("drop the record of an abandoned start", "sandbox_id", sb.ID, "err", err)
			}
		}
	}
}
