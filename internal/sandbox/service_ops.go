package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// Pause freezes a RUNNING sandbox. A PAUSED one is left as it is, and that is no error: as
// in OpenHands, clients pause "just in case". Any other status is an error wrapping ErrState
// (a *StateError) that says why.
func (s *Service) Pause(ctx context.Context, ownerID, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if sb.Status == StatusPaused {
		return nil
	}
	if err := errors.Join(needStatus(sb, StatusRunning, "paused"), s.ours(sb)); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if _, err := s.pauseLocked(ctx, sb); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	return nil
}

// pauseLocked freezes the RUNNING sandbox sb; the caller holds its lock.
func (s *Service) pauseLocked(ctx context.Context, sb Sandbox) (Sandbox, error) {
	bctx := context.WithoutCancel(ctx)
	began := time.Now()
	err := s.backend.Pause(bctx, sb.Instance)
	s.observe(OpPause, began, err)
	if err != nil {
		// Thaw what did freeze, so the sandbox stays as it was: RUNNING.
		if rerr := s.backend.Resume(bctx, sb.Instance); rerr != nil {
			s.log.ErrorContext(ctx, "resume after failed pause", "sandbox_id", sb.ID, "err", rerr)
		}
		return sb, err
	}
	return s.setStatus(bctx, sb, StatusPaused, "")
}

// Resume thaws a PAUSED sandbox and returns once its runtime answers; a RUNNING one is left as
// it is, and that is no error (clients resume "just in case"). It counts toward
// MaxRunningPerUser (ErrLimit). If the backend fails or the runtime does not answer, the
// answer is a *FailedError and the sandbox is frozen again and stays PAUSED, or is MISSING
// when its processes are gone.
func (s *Service) Resume(ctx context.Context, ownerID, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	if sb.Status == StatusRunning {
		return nil
	}
	if err := errors.Join(needStatus(sb, StatusPaused, "resumed"), s.ours(sb)); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	key, err := s.sessionKey(sb)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	unlockOwner := s.locks.lock("owner:" + sb.OwnerID)
	defer unlockOwner()
	if err := s.checkLimit(ctx, sb.OwnerID); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}

	bctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.startTimeout, errStartTimeout)
	defer cancel()
	began := time.Now()
	var c *runtimeclient.Client
	var detail string // what went wrong, for the owner
	if err = s.backend.Resume(bctx, sb.Instance); err != nil {
		detail = "the " + s.backend.Name() + " backend could not resume it; the server log has the cause"
		if errors.Is(context.Cause(bctx), errStartTimeout) {
			detail = fmt.Sprintf("the %s backend did not resume it within %v (the machine may be busy)", s.backend.Name(), s.startTimeout)
		}
	} else if c, err = s.waitHealthy(bctx, sb, key); err != nil {
		detail = readinessDetail(err, s.startTimeout)
	}
	s.observe(OpResume, began, err)
	if err != nil {
		s.log.ErrorContext(ctx, "sandbox resume failed", "sandbox_id", id, "err", err)
		detail += s.afterFailedResume(context.WithoutCancel(ctx), sb)
		return &FailedError{Op: "resume", ID: id, Detail: detail, Err: err}
	}
	if _, err := s.setStatus(context.WithoutCancel(ctx), sb, StatusRunning, ""); err != nil {
		c.CloseIdleConnections()
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	s.keepClient(sb, c)
	return nil
}

// afterFailedResume leaves a sandbox that did not resume as the watcher would find it:
// PAUSED, frozen again, or MISSING when its processes are gone. It returns what the owner is
// told of that, to follow the failure's detail.
func (s *Service) afterFailedResume(ctx context.Context, sb Sandbox) string {
	gone, err := s.markGoneLocked(ctx, sb)
	if err != nil {
		s.log.ErrorContext(ctx, "mark vanished sandbox", "sandbox_id", sb.ID, "err", err)
	}
	if gone {
		return "; its processes are gone: delete it"
	}
	if err := s.backend.Pause(ctx, sb.Instance); err != nil {
		s.log.ErrorContext(ctx, "pause again after failed resume", "sandbox_id", sb.ID, "err", err)
		return "; it could not be paused again, so it may still run: delete it"
	}
	return "; it is paused again"
}

// Delete destroys the sandbox's processes and everything it owned, then its record. It works
// in any status. An unknown sandbox is ErrNotFound.
func (s *Service) Delete(ctx context.Context, ownerID, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	if err := s.elsewhere(sb); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	s.cancelStart(id)
	cctx := context.WithoutCancel(ctx)
	if s.ours(sb) == nil {
		inst := sb.Instance
		if inst.ID == "" { // the start never got as far as the backend's answer
			inst.ID = sb.ID
		}
		if err := s.backend.Destroy(cctx, inst); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", id, err)
		}
	} else {
		s.log.WarnContext(ctx, "deleting the record of a sandbox of another backend; its processes are not touched",
			"sandbox_id", id, "sandbox_backend", sb.Backend)
	}
	if err := s.store.DeleteSandbox(cctx, id); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	s.dropClient(id)
	s.changes.notify(id)
	s.log.InfoContext(ctx, "sandbox deleted", "sandbox_id", id)
	from := sb.Status
	sb.Status, sb.Detail = StatusMissing, DetailDeleted
	s.told(cctx, sb, from)
	return nil
}
