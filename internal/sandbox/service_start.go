package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Causes of a failed readiness wait.
var (
	errStartTimeout  = errors.New("runtime did not answer in time")
	errRuntimeExited = errors.New("sandbox processes exited before the runtime answered")
)

// Start starts a sandbox from spec specID (empty means the default spec) for ownerID. It
// returns the record as stored, normally STARTING: the runtime is still coming up, and the
// sandbox becomes RUNNING (or ERROR) in the background; WaitRunning waits for that.
//
// A sandbox taken from the spec's warm pool is RUNNING already when Start returns (see
// pool.go); when the pool is empty, Start starts one cold.
//
// If the backend cannot start it, the record is left in ERROR with the reason in Detail,
// nothing of it keeps running, and Start returns that record with the error.
func (s *Service) Start(ctx context.Context, ownerID, specID string) (Sandbox, error) {
	sb, settled, err := s.StartSettling(ctx, ownerID, specID)
	settled()
	return sb, err
}

// StartSettling is Start for a caller that goes on setting the sandbox up at once (a
// conversation's start makes its directory there and reads its skills) and calls settled
// when that is done. A sandbox claimed from a warm pool holds back the pools' refill until
// then, for PoolHold at most: starting a sandbox takes both of a small machine's cores for
// tens of milliseconds, which the setup would otherwise share. settled is never nil, and
// calling it again does nothing.
func (s *Service) StartSettling(ctx context.Context, ownerID, specID string) (sb Sandbox, settled func(), err error) {
	settled = func() {}
	if specID == "" {
		specID = s.defaultSpec
	}
	spec, err := s.store.GetSpec(ctx, specID)
	if err != nil {
		return Sandbox{}, settled, fmt.Errorf("start sandbox from spec %q: %w", specID, err)
	}
	if c, ok := s.backend.(SpecChecker); ok {
		if err := c.CheckSpec(spec); err != nil {
			return Sandbox{}, settled, fmt.Errorf("start sandbox from spec %q: %w", specID, err)
		}
	}
	key := s.newKey()
	sealed, err := s.sealer.Seal([]byte(key))
	if err != nil {
		return Sandbox{}, settled, fmt.Errorf("start sandbox: seal session key: %w", err)
	}
	switch {
	case s.shared == nil && s.pools.sizes[spec.ID] > 0:
		// The hold is taken before the claim, so that no refill begins in between; the pool
		// refills once it ends, the claim done and the caller's setup too.
		release := s.pools.holdRefill(time.Now().Add(s.poolHold))
		if m, ok := s.pools.take(spec.ID, specDigest(spec)); ok {
			sb, err := s.startClaimed(ctx, ownerID, spec, m, key, sealed, nil)
			return sb, release, err
		}
		release()
	case s.pools.sizes[spec.ID] > 0:
		// A shared pool is looked in (a call to the backend) only for a spec this replica
		// pools too. It is refilled by the backend, not by this machine's cores: no hold.
		if sb, ok, err := s.claimShared(ctx, ownerID, spec, key, sealed); ok {
			s.pools.poke()
			return sb, settled, err
		}
	}
	sb, err = s.startCold(ctx, ownerID, spec, key, sealed)
	return sb, settled, err
}

// startCold starts a sandbox of spec for ownerID with the backend: Start without a pool.
func (s *Service) startCold(ctx context.Context, ownerID string, spec Spec, key string, sealed []byte) (Sandbox, error) {
	now := s.now().UTC()
	sb := Sandbox{
		ID:               s.newID(),
		OwnerID:          ownerID,
		SpecID:           spec.ID,
		Backend:          s.backend.Name(),
		Node:             s.node,
		Status:           StatusStarting,
		SessionKeySealed: sealed,
		SessionKeyHash:   HashSessionKey(key),
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	unlock := s.locks.lock(sb.ID)
	defer unlock()
	if err := s.store.CreateSandbox(ctx, sb, s.maxRunning); err != nil {
		if errors.Is(err, ErrLimit) {
			err = fmt.Errorf("%w: %d allowed are starting or running", ErrLimit, s.maxRunning)
		}
		return Sandbox{}, fmt.Errorf("start sandbox: %w", err)
	}

	// From here the record exists; finish under a context the caller cannot cancel, so the
	// record and the processes never disagree.
	bctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.startTimeout, errStartTimeout)
	defer cancel()
	began := time.Now()
	inst, err := s.backend.Start(bctx, StartRequest{ID: sb.ID, OwnerID: ownerID, Spec: spec, SessionKey: key})
	if err != nil {
		s.observe(OpStart, began, err)
		return s.failStart(bctx, sb, err)
	}
	sb.Instance = inst
	sb.UpdatedAt = s.now().UTC()
	if err := s.store.UpdateSandbox(bctx, sb, StatusStarting); err != nil {
		if derr := s.backend.Destroy(bctx, inst); derr != nil {
			s.log.ErrorContext(ctx, "destroy sandbox after failed write", "sandbox_id", sb.ID, "err", derr)
		}
		s.observe(OpStart, began, err)
		return s.failStart(bctx, sb, fmt.Errorf("record instance: %w", err))
	}
	s.log.InfoContext(ctx, "sandbox starting", "sandbox_id", sb.ID, "owner_id", ownerID, "spec_id", spec.ID)
	s.awaitReady(sb, key, began)
	return sb, nil
}

// checkLimit returns ErrLimit when the owner runs as many sandboxes as allowed.
func (s *Service) checkLimit(ctx context.Context, ownerID string) error {
	if s.maxRunning <= 0 {
		return nil
	}
	n, err := s.store.CountSandboxes(ctx, ownerID, StatusStarting, StatusRunning)
	if err != nil {
		return err
	}
	if n >= s.maxRunning {
		return fmt.Errorf("%w: %d of %d allowed are starting or running", ErrLimit, n, s.maxRunning)
	}
	return nil
}

// failStart records a failed start as ERROR and returns the record and a *FailedError. The
// record's detail is for the owner; the cause, which may name host paths, goes to the log.
// ctx is the start's, which may have run out (a start that timed out): the record is
// written beyond it.
func (s *Service) failStart(ctx context.Context, sb Sandbox, cause error) (Sandbox, error) {
	s.log.ErrorContext(ctx, "sandbox start failed", "sandbox_id", sb.ID, "err", cause)
	detail := "the " + s.backend.Name() + " backend could not start the sandbox; the server log has the cause"
	var cm interface{ ClientMessage() string }
	switch {
	case errors.Is(context.Cause(ctx), errStartTimeout):
		detail = fmt.Sprintf("the sandbox did not start within %v on the %s backend (the machine may be busy); the server log has the cause",
			s.startTimeout, s.backend.Name())
	case errors.As(cause, &cm):
		detail = cm.ClientMessage()
	}
	failed, err := s.setStatus(context.WithoutCancel(ctx), sb, StatusError, detail)
	if err != nil {
		s.log.ErrorContext(ctx, "record failed start", "sandbox_id", sb.ID, "err", err)
	}
	return failed, &FailedError{Op: "start", ID: sb.ID, Detail: detail, Err: cause}
}

// awaitReady waits in the background for the runtime of the STARTING sandbox sb, then moves
// it to RUNNING, or to ERROR (destroying it) when the runtime does not answer in time. began
// is when the backend was asked to start it (zero for a start the last server began, which
// is not timed).
func (s *Service) awaitReady(sb Sandbox, key string, began time.Time) {
	ctx, cancel := context.WithCancel(s.life)
	w := &startWait{cancel: cancel}
	s.mu.Lock()
	s.starting[sb.ID] = w
	s.mu.Unlock()
	ok := s.spawn(func() {
		defer s.endWait(sb.ID, w)
		s.finishStart(ctx, sb, key, began)
	})
	if !ok {
		s.endWait(sb.ID, w)
	}
}

func (s *Service) endWait(id string, w *startWait) {
	w.cancel()
	s.mu.Lock()
	if s.starting[id] == w {
		delete(s.starting, id)
	}
	s.mu.Unlock()
}

// cancelStart stops the readiness wait of sandbox id, if one runs.
func (s *Service) cancelStart(id string) {
	s.mu.Lock()
	w := s.starting[id]
	s.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}

func (s *Service) finishStart(ctx context.Context, sb Sandbox, key string, began time.Time) {
	wctx, cancel := context.WithTimeoutCause(ctx, s.startTimeout, errStartTimeout)
	defer cancel()
	c, healthErr := s.waitHealthy(wctx, sb, key)
	if healthErr != nil && ctx.Err() != nil {
		return // Delete or Close stopped the wait; the sandbox is theirs now
	}
	if !began.IsZero() {
		s.observe(OpStart, began, healthErr)
	}

	unlock := s.locks.lock(sb.ID)
	defer unlock()
	cctx := context.WithoutCancel(ctx)
	cur, err := s.store.GetSandbox(cctx, "", sb.ID)
	if err != nil || cur.Status != StatusStarting {
		if c != nil {
			c.CloseIdleConnections()
		}
		return // deleted or moved on meanwhile
	}
	if healthErr == nil {
		if _, err := s.setStatus(cctx, cur, StatusRunning, ""); err != nil {
			c.CloseIdleConnections()
			s.log.ErrorContext(ctx, "record running sandbox", "sandbox_id", sb.ID, "err", err)
			return
		}
		s.keepClient(cur, c)
		return
	}
	s.log.WarnContext(ctx, "sandbox did not start", "sandbox_id", sb.ID, "err", healthErr)
	if err := s.backend.Destroy(cctx, cur.Instance); err != nil {
		s.log.ErrorContext(ctx, "destroy sandbox that did not start", "sandbox_id", sb.ID, "err", err)
	}
	if _, err := s.setStatus(cctx, cur, StatusError, readinessDetail(healthErr, s.startTimeout)); err != nil {
		s.log.ErrorContext(ctx, "record failed start", "sandbox_id", sb.ID, "err", err)
	}
}

// Bounds of the readiness poll: tight at first (a process runtime answers within a few
// milliseconds), looser once a runtime is slow; each probe has its own deadline; the backend
// is asked whether the processes still exist at most every inspectInterval, so a runtime that
// died fails at once rather than at the timeout.
const (
	pollFirst       = time.Millisecond
	pollFast        = 2 * time.Millisecond
	pollSlow        = 50 * time.Millisecond
	pollFastFor     = time.Second
	probeTimeout    = 2 * time.Second
	inspectInterval = 100 * time.Millisecond
)

// readinessDetail words a failed readiness wait for the sandbox's owner.
func readinessDetail(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, errRuntimeExited):
		return "the sandbox's runtime exited before it answered; the server log has the cause"
	case errors.Is(err, errStartTimeout):
		return fmt.Sprintf("the sandbox's runtime did not answer within %v", timeout)
	}
	return "the sandbox's runtime did not answer; the server log has the cause"
}
