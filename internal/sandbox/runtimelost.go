package sandbox

import (
	"context"
	"fmt"
	"time"
)

// detailRuntimeExited is the Detail of a sandbox whose runtime ended while it ran.
const detailRuntimeExited = "its runtime exited while the sandbox ran (a process in the sandbox may have ended it); delete the sandbox and start the conversation again on a new one"

// How long CheckRuntime looks for the processes of a sandbox whose runtime did not answer
// to be gone, and how often: a runtime that exits takes the sandbox's other processes with it
// (bwrap's init, docker's), a few milliseconds later.
const (
	runtimeLostWait  = 2 * time.Second
	runtimeLostEvery = 50 * time.Millisecond
	// aliveTimeout bounds the question to the runtime meanwhile: a runtime that exited is
	// refused at once; one that answers late is alive anyway.
	aliveTimeout = 500 * time.Millisecond
)

// CheckRuntime is called by a caller whose request to the runtime of the owner's sandbox id
// was not answered (no connection, or one cut off). When the backend finds the sandbox's
// processes gone while its record says RUNNING, the sandbox becomes ERROR at once, saying
// that its runtime exited, instead of MISSING at the watcher's next pass: whatever its owner
// asks next is refused with that reason. It returns a *NotRunningError (ErrState) when the
// sandbox cannot be used any more, now or already, and nil when it still runs (the runtime
// answers again: the failure was a passing one) or is another node's or not RUNNING.
func (s *Service) CheckRuntime(ctx context.Context, ownerID, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return fmt.Errorf("check the runtime of sandbox %s: %w", id, err)
	}
	switch {
	case sb.Status == StatusError || sb.Status == StatusMissing:
		return &NotRunningError{ID: id, Status: sb.Status, Detail: sb.Detail}
	case sb.Status != StatusRunning || s.ours(sb) != nil:
		return nil
	}
	key, err := s.sessionKey(sb)
	if err != nil {
		return err
	}
	c, err := s.newClient(sb.Instance, key)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(runtimeLostWait)
	for {
		state, err := s.backend.Inspect(ctx, sb.Instance)
		if err != nil {
			return fmt.Errorf("check the runtime of sandbox %s: %w", id, err)
		}
		if state == StateGone {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, aliveTimeout)
		alive := c.Alive(pctx) == nil
		cancel()
		if alive || ctx.Err() != nil || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(runtimeLostEvery):
		}
	}
	failed, err := s.setStatus(ctx, sb, StatusError, detailRuntimeExited)
	if err != nil {
		return fmt.Errorf("check the runtime of sandbox %s: %w", id, err)
	}
	s.log.WarnContext(ctx, "sandbox runtime exited while it ran", "sandbox_id", id, "owner_id", sb.OwnerID)
	return &NotRunningError{ID: id, Status: failed.Status, Detail: failed.Detail}
}
