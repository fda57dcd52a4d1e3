package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// detailGone is the Detail of a sandbox whose processes vanished.
const detailGone = "sandbox processes are gone"

// Reconcile brings the records in line with what runs, once at start-up, for the sandboxes of
// this node (every sandbox, for a remote backend): a record whose
// processes are gone becomes MISSING; one whose processes run is adopted, its status set to
// match (RUNNING or PAUSED; a STARTING one is health-checked on to RUNNING); the record of a
// start the last server did not see through to the backend's answer is removed; and a sandbox
// of the backend with no record (an orphan) is destroyed. It carries on past a sandbox it cannot
// reconcile and returns the errors together.
func (s *Service) Reconcile(ctx context.Context) error {
	if !s.reconciles(ctx) {
		s.log.Info("another replica reconciles the backend's sandboxes")
		return nil
	}
	s.leading.Store(true)
	return s.reconcileAll(ctx)
}

func (s *Service) reconcileAll(ctx context.Context) error {
	sbs, err := s.store.AllSandboxes(ctx)
	if err != nil {
		return fmt.Errorf("reconcile sandboxes: %w", err)
	}
	var errs []error
	if !s.caps.Remote {
		// Records older than nodes are this machine's: one data directory held them all.
		n, err := s.store.AdoptSandboxes(ctx, s.backend.Name(), s.node)
		if err != nil {
			return fmt.Errorf("reconcile sandboxes: %w", err)
		}
		if n > 0 {
			s.log.Info("sandboxes recorded before nodes are this node's", "sandboxes", n, "node", s.node)
			if sbs, err = s.store.AllSandboxes(ctx); err != nil {
				return fmt.Errorf("reconcile sandboxes: %w", err)
			}
		}
	}
	if err := s.hashSessionKeys(ctx, sbs); err != nil {
		errs = append(errs, err)
	}
	for _, sb := range sbs {
		if s.ours(sb) != nil {
			continue
		}
		if err := s.reconcileOne(ctx, sb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	insts, err := s.backend.List(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("reconcile sandboxes: %w", err))...)
	}
	insts, err = s.withoutMembers(ctx, insts)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("reconcile sandboxes: %w", err))...)
	}
	marks := map[string]orphan{}
	for _, inst := range insts {
		m, keep, err := s.removeOrphan(ctx, inst)
		if err != nil {
			errs = append(errs, err)
		}
		if keep {
			marks[inst.ID] = m
		}
	}
	s.setOrphans(marks)
	return errors.Join(errs...)
}

func (s *Service) reconcileOne(ctx context.Context, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, "", id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reconcile sandbox %s: %w", id, err)
	}
	if sb.Instance.ID == "" && (sb.Status == StatusStarting || sb.Status == StatusMissing) {
		if sb.Status == StatusStarting && !s.startAbandoned(sb) {
			return nil // a start in flight on another replica
		}
		return s.dropUnstarted(ctx, sb)
	}
	if sb.Status == StatusError || sb.Status == StatusMissing {
		return nil
	}
	state, err := s.backend.Inspect(ctx, sb.Instance)
	if err != nil {
		return fmt.Errorf("reconcile sandbox %s: %w", id, err)
	}
	switch {
	case state == StateGone:
		_, err = s.setStatus(ctx, sb, StatusMissing, detailGone)
	case sb.Status == StatusStarting:
		err = s.adoptStarting(ctx, sb, state)
	case state == StateRunning && sb.Status == StatusPaused:
		_, err = s.setStatus(ctx, sb, StatusRunning, "")
	case state == StatePaused && sb.Status == StatusRunning:
		_, err = s.setStatus(ctx, sb, StatusPaused, "")
	}
	if err != nil {
		return fmt.Errorf("reconcile sandbox %s: %w", id, err)
	}
	s.log.Info("sandbox reconciled", "sandbox_id", id, "state", state)
	return nil
}

// dropUnstarted removes the record of a sandbox whose start a previous server never saw
// through: it stopped after storing the record and before the backend answered, so nobody was
// told of the sandbox (Start had not returned; a start task records its sandbox only after)
// and there is nothing to adopt. Records of that kind that older versions marked MISSING go
// the same way. Whatever the backend made of it has no record now, so the orphan pass of
// Reconcile that follows destroys it.
func (s *Service) dropUnstarted(ctx context.Context, sb Sandbox) error {
	if err := s.store.DeleteSandbox(ctx, sb.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("reconcile sandbox %s: remove the record of an unfinished start: %w", sb.ID, err)
	}
	s.log.Warn("removed a sandbox whose start the last server did not finish", "sandbox_id", sb.ID, "owner_id", sb.OwnerID)
	return nil
}

// adoptStarting resumes the wait for the runtime of a sandbox that was STARTING when the last
// server stopped. Nothing should have frozen it; if something did, it is thawed first.
func (s *Service) adoptStarting(ctx context.Context, sb Sandbox, state State) error {
	key, err := s.sessionKey(sb)
	if err != nil {
		return err
	}
	if state == StatePaused {
		if err := s.backend.Resume(ctx, sb.Instance); err != nil {
			return err
		}
	}
	s.awaitReady(sb, key, time.Time{}) // its start began in the last server: not timed
	return nil
}

// removeOrphan destroys a sandbox the backend found if it has no record (a remote backend's
// once it has had none for the orphan grace), or if its record says nothing should run
// (ERROR, MISSING) while processes do. keep says that the next orphan pass is to remember m
// of it: when it was first found without a record, or that its record keeps it.
func (s *Service) removeOrphan(ctx context.Context, inst Instance) (m orphan, keep bool, err error) {
	if s.pools.holds(inst.ID) {
		return orphan{}, false, nil // a member of this service's warm pools, which have no records
	}
	unlock := s.locks.lock(inst.ID)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, "", inst.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		if s.caps.Remote {
			var due bool
			if m, due = s.orphanDue(inst.ID); !due {
				return m, true, nil
			}
		}
	case err != nil:
		return orphan{}, false, fmt.Errorf("reconcile orphan %s: %w", inst.ID, err)
	case sb.Status != StatusError && sb.Status != StatusMissing:
		return orphan{}, false, nil
	default:
		state, err := s.backend.Inspect(ctx, inst)
		if err != nil {
			return orphan{}, false, fmt.Errorf("reconcile orphan %s: %w", inst.ID, err)
		}
		if state == StateGone {
			return orphan{recorded: true}, true, nil // what is left stays for its record, until Delete
		}
	}
	if err := s.backend.Destroy(ctx, inst); err != nil {
		return m, !m.seen.IsZero(), fmt.Errorf("destroy orphan sandbox %s: %w", inst.ID, err)
	}
	s.log.Warn("destroyed orphan sandbox", "sandbox_id", inst.ID)
	return orphan{}, false, nil
}

// Run makes a Watch pass every WatchInterval, keeps the warm pools full, and, for a backend
// that tells of its sandboxes' changes (Watcher), checks each sandbox it tells of at once
// (changes.go). It blocks until ctx ends or the service is closed, and returns nil then.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.life, cancel)
	defer stop()

	s.spawn(func() { s.fillPools(ctx) })
	if w, ok := s.backend.(Watcher); ok {
		s.followChanges(ctx, w)
	}
	tick := time.NewTicker(s.watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := s.Watch(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("watch sandboxes", "err", err)
			}
		}
	}
}

// Watch makes one pass of the watcher: RUNNING and PAUSED sandboxes whose processes vanished
// become MISSING, a remote backend's orphans are removed once their grace is over (orphans.go),
// and idle ones are paused (as of the service's clock, ServiceOptions.Now).
// Run calls it on a ticker; a test that owns the clock calls it to decide when a pass runs.
//
// Of a remote backend, one replica at a time watches (Store.ClaimReconciler); the others'
// passes do nothing.
func (s *Service) Watch(ctx context.Context) error {
	s.tellUse(ctx)
	if !s.reconciles(ctx) {
		s.leading.Store(false)
		return nil
	}
	if !s.leading.Swap(true) {
		// Taken over from a replica that stopped: what happened meanwhile is reconciled
		// first, as at a start.
		if err := s.reconcileAll(ctx); err != nil {
			s.log.Error("reconcile the sandboxes on taking the role over", "err", err)
		}
	}
	sbs, err := s.store.LiveSandboxes(ctx)
	if err != nil {
		return err
	}
	s.checkVanished(ctx, sbs)
	if s.caps.Remote {
		s.removeOrphans(ctx, sbs)
	}
	s.pauseIdle(ctx, sbs)
	return nil
}

// checkVanished marks RUNNING and PAUSED sandboxes whose processes are gone MISSING.
func (s *Service) checkVanished(ctx context.Context, sbs []Sandbox) {
	for _, sb := range sbs {
		if (sb.Status != StatusRunning && sb.Status != StatusPaused) || s.ours(sb) != nil {
			continue
		}
		if state, err := s.backend.Inspect(ctx, sb.Instance); err != nil || state != StateGone {
			continue
		}
		if err := s.markGone(ctx, sb.ID); err != nil {
			s.log.Error("mark vanished sandbox", "sandbox_id", sb.ID, "err", err)
		}
	}
}

// markGone checks again under the sandbox's lock, then marks it MISSING.
func (s *Service) markGone(ctx context.Context, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, "", id)
	if err != nil || (sb.Status != StatusRunning && sb.Status != StatusPaused) {
		return nil
	}
	_, err = s.markGoneLocked(ctx, sb)
	return err
}

// markGoneLocked marks sb MISSING if the backend finds its processes gone, and says whether
// they were. The caller holds the sandbox's lock.
func (s *Service) markGoneLocked(ctx context.Context, sb Sandbox) (bool, error) {
	if state, err := s.backend.Inspect(ctx, sb.Instance); err != nil || state != StateGone {
		return false, err
	}
	_, err := s.setStatus(ctx, sb, StatusMissing, detailGone)
	return true, err
}
