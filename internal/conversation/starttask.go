package conversation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentd/agentd/internal/logctx"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/webhook"
)

// launch runs a start task in a goroutine owned by the service. Its log lines carry attrs
// (those of the request that created it), its conversation, task and, once known, sandbox.
func (s *Service) launch(t StartTask, specID string, attrs ...slog.Attr) {
	ctx, cancel := context.WithCancel(logctx.With(s.ctx, append(attrs,
		slog.String("conversation_id", t.ConversationID), slog.String("task_id", t.ID))...))
	if t.SandboxID != "" {
		logctx.Add(ctx, slog.String("sandbox_id", t.SandboxID))
	}
	s.mu.Lock()
	s.tasks[t.ConversationID] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.tasks, t.ConversationID)
			s.settling++
			idle := s.idleLocked()
			s.mu.Unlock()
			if idle {
				s.o.OnIdle()
			}
			cancel()
			s.endWatches(t.ID)
			s.settled(t.ConversationID)
		}()
		s.runTask(ctx, t, specID)
	}()
}

// runTask walks a start task through its steps, saving each, until READY or ERROR. A task
// cut short by Close stays at its last saved step and is resumed by the next process.
func (s *Service) runTask(ctx context.Context, t StartTask, specID string) {
	err := s.walk(ctx, &t, specID)
	if err == nil {
		v, err := s.o.Store.GetConversation(ctx, t.OwnerID, t.ConversationID)
		if err != nil {
			return
		}
		// Messages sent while it started follow the first, in order. One that fails to be
		// delivered stays queued for the next process's resume.
		if err := s.deliverPending(ctx, v.Conversation); err != nil {
			logRunErr(ctx, s.log, "deliver pending messages", err)
		}
		s.notify(ctx, webhook.KindConversationStatusChanged, v.Conversation, map[string]any{"conversation_status": string(StatusRunning)})
		// The agent answers them now, unless the user paused it meanwhile.
		if v.ExecutionStatus != "paused" {
			s.startLoop(t.OwnerID, t.ConversationID)
		}
		return
	}
	if errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
		return // shutting down: resume later
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, context.Canceled) {
		return // the conversation was deleted meanwhile
	}
	s.log.WarnContext(ctx, "conversation start failed", "err", err)
	t.Status = TaskError
	t.Detail = taskDetail(err)
	if err := s.saveTask(context.WithoutCancel(ctx), &t); err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.log.ErrorContext(ctx, "save failed start task", "err", err)
		}
		return
	}
	s.notify(ctx, webhook.KindConversationStartFailed, Conversation{ID: t.ConversationID, OwnerID: t.OwnerID, SandboxID: t.SandboxID},
		map[string]any{"detail": t.Detail})
}

// taskDetail is the error text clients see: the domain's words, never internal ones (those
// go to the log).
func taskDetail(err error) string {
	var cm interface{ ClientMessage() string }
	switch {
	case errors.As(err, &cm):
		return cm.ClientMessage()
	case errors.Is(err, sandbox.ErrLimit):
		return "too many running sandboxes: pause or delete one first"
	case errors.Is(err, sandbox.ErrSpecNotFound):
		return "sandbox spec not found"
	case errors.Is(err, sandbox.ErrNotFound):
		return "sandbox not found"
	case errors.Is(err, context.DeadlineExceeded):
		return "sandbox did not start in time"
	}
	return "the conversation could not start; the server log has the cause"
}

func (s *Service) walk(ctx context.Context, t *StartTask, specID string) error {
	t.Status = TaskWaitingForSandbox
	if err := s.saveTask(ctx, t); err != nil {
		return err
	}
	v, err := s.o.Store.GetConversation(ctx, t.OwnerID, t.ConversationID)
	if err != nil {
		return err
	}
	var made <-chan error
	if t.SandboxID == "" {
		sb, settled, err := s.o.Sandboxes.StartSettling(ctx, t.OwnerID, specID)
		// The pool's refill waits until the conversation's directory and skills are ready.
		defer settled()
		if err != nil {
			return fmt.Errorf("start sandbox: %w", err)
		}
		t.SandboxID, v.SandboxID = sb.ID, sb.ID // the save below stores it as the conversation's too
		logctx.Add(ctx, slog.String("sandbox_id", sb.ID))
		if sb.Status == sandbox.StatusRunning {
			// Claimed from a warm pool, it runs already: the conversation's directory is
			// made while the task records the sandbox.
			made = s.makeWorkDir(ctx, t, v.Conversation, sb)
		}
		// The sandbox exists now: record it even if ctx ended meanwhile (Close during the
		// start), so that the task resumed by the next process uses it instead of starting
		// another one and leaving this one running for nobody.
		if err := s.saveTask(context.WithoutCancel(ctx), t); err != nil {
			if made != nil {
				<-made
			}
			if errors.Is(err, ErrNotFound) {
				// The conversation was deleted while its sandbox started (the deletion found
				// no sandbox to delete): the sandbox goes too, rather than run for nobody.
				if derr := s.o.Sandboxes.Delete(context.WithoutCancel(ctx), t.OwnerID, sb.ID); derr != nil && !errors.Is(derr, sandbox.ErrNotFound) {
					s.log.ErrorContext(ctx, "delete the sandbox of a conversation deleted while it started", "err", derr)
				}
			}
			return err
		}
	}
	if made == nil {
		v.SandboxID = t.SandboxID // as the first save stored it
		running, err := s.runningSandbox(ctx, t)
		if err != nil {
			return err
		}
		made = s.makeWorkDir(ctx, t, v.Conversation, running)
	}
	if err := s.prepareWorkspace(ctx, t, v.Conversation, made); err != nil {
		return err
	}
	// OpenHands' last step before READY, when its agent server takes the conversation; here
	// the conversation is the control plane's already, so the step is recorded and passed.
	t.Status = TaskReady
	t.Detail = ""
	return s.saveTask(ctx, t, TaskStartingConversation)
}

// runningSandbox returns the task's sandbox once it runs: it resumes a paused one and waits
// for one that starts.
func (s *Service) runningSandbox(ctx context.Context, t *StartTask) (sandbox.Sandbox, error) {
	sb, err := s.o.Sandboxes.Get(ctx, t.OwnerID, t.SandboxID)
	if err != nil {
		return sandbox.Sandbox{}, fmt.Errorf("get sandbox: %w", err)
	}
	switch sb.Status {
	case sandbox.StatusPaused:
		if err := s.o.Sandboxes.Resume(ctx, t.OwnerID, sb.ID); err != nil && !errors.Is(err, sandbox.ErrState) {
			return sandbox.Sandbox{}, fmt.Errorf("resume sandbox: %w", err)
		}
	case sandbox.StatusError, sandbox.StatusMissing:
		return sandbox.Sandbox{}, &sandbox.NotRunningError{ID: sb.ID, Status: sb.Status, Detail: sb.Detail}
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()
	running, err := s.o.Sandboxes.WaitRunning(waitCtx, t.OwnerID, sb.ID)
	if err != nil {
		return sandbox.Sandbox{}, fmt.Errorf("wait for sandbox: %w", err)
	}
	return running, nil
}

// makeWorkDir makes the conversation's directory in the running sandbox sb, in the
// background; the channel has the outcome.
func (s *Service) makeWorkDir(ctx context.Context, t *StartTask, v Conversation, sb sandbox.Sandbox) <-chan error {
	made := make(chan error, 1)
	go func() { made <- s.prepareWorkDir(ctx, t, v, sb) }()
	return made
}

// prepareWorkspace waits for the conversation's directory to be made (made), clones its
// repository there and reads the skills of both. Without a repository, the skills are read
// while the directory is made: they cannot depend on each other (making the directory
// writes no file but git's own), and both are on the way to the agent's first step.
func (s *Service) prepareWorkspace(ctx context.Context, t *StartTask, v Conversation, made <-chan error) error {
	if deref(v.SelectedRepository) != "" {
		if err := <-made; err != nil {
			return err
		}
		if err := s.prepareRepository(ctx, t, v); err != nil {
			return err
		}
		return s.setUpSkills(ctx, t, v)
	}
	err := s.setUpSkills(ctx, t, v)
	if werr := <-made; werr != nil {
		return werr
	}
	return err
}
