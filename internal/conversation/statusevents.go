package conversation

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// A conversation's status changes are events of its log (see event.StateStartTask), so that
// its streams tell a page everything: each step of its start task, with the conversation
// status it implies at the first step, at READY (with the sandbox's status) and at ERROR;
// each change of its sandbox's status, with the conversation status it implies. The agent's
// execution status and statistics are state updates already. A step's progress (a clone's
// percentages) reaches the live streams without being stored: it changes hundreds of times,
// and the next step says where the task is.

// State is what a start_task update says of t.
func (t StartTask) State() event.StartTaskState {
	st := event.StartTaskState{ID: t.ID, Status: string(t.Status), Detail: optional(t.Detail),
		SandboxID: optional(t.SandboxID), UpdatedAt: t.UpdatedAt}
	if t.Status == TaskReady {
		st.AppConversationID = optional(t.ConversationID)
	}
	return st
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// saveTask stores t's step, with its sandbox as the conversation's, and records it in the
// conversation's log, in one transaction; then it tells the task's watches. The steps of
// passed, recorded before t's own, are steps the task went through without stopping at: the
// log and the watches have each, the stored task is at t's.
func (s *Service) saveTask(ctx context.Context, t *StartTask, passed ...TaskStatus) error {
	t.UpdatedAt = s.o.Now().UTC()
	v, err := s.o.Store.GetConversation(ctx, t.OwnerID, t.ConversationID)
	if err != nil {
		return err
	}
	// The conversation as it is once t is stored.
	v.TaskStatus, v.TaskDetail = t.Status, t.Detail
	steps := make([]StartTask, 0, len(passed)+1)
	for _, st := range passed {
		step := *t
		step.Status, step.Detail = st, ""
		steps = append(steps, step)
	}
	steps = append(steps, *t)
	var updates []stateUpdate
	for _, step := range steps {
		updates = append(updates, taskUpdates(step, v)...)
	}
	evs, err := s.stateEvents(updates)
	if err == nil {
		_, err = s.recordWith(ctx, v.Conversation, evs, StateUpdate{Task: t, SandboxID: t.SandboxID})
	}
	if err != nil {
		return fmt.Errorf("save start task %s at %s: %w", t.ID, t.Status, err)
	}
	for _, step := range steps {
		s.notifyWatches(step)
	}
	return nil
}

// saveTaskProgress stores t's detail, the progress of its step, and tells the live streams
// without recording it in the log.
func (s *Service) saveTaskProgress(ctx context.Context, t *StartTask) error {
	t.UpdatedAt = s.o.Now().UTC()
	if err := s.o.Store.UpdateStartTask(ctx, *t); err != nil {
		return err
	}
	s.notifyWatches(*t)
	v, err := s.o.Store.GetConversation(ctx, t.OwnerID, t.ConversationID)
	if err != nil {
		return err
	}
	ev, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateStartTask, t.State())
	if err != nil {
		return err
	}
	ev.ConversationID = t.ConversationID
	evs := []event.Event{ev}
	if err := s.redact(ctx, v.Conversation, evs); err != nil {
		return err
	}
	s.o.Bus.Publish(evs...)
	return nil
}

// taskUpdates are the state updates that record t's step: the step, and the conversation
// status it implies (v's, with t stored) at the first step, READY and ERROR.
func taskUpdates(t StartTask, v View) []stateUpdate {
	updates := []stateUpdate{{event.StateStartTask, t.State()}}
	switch t.Status {
	case TaskReady:
		updates = append(updates, stateUpdate{event.StateSandboxStatus, v.SandboxStatus},
			stateUpdate{event.StateConversationStatus, StatusOf(v)})
	case TaskWaitingForSandbox, TaskError:
		updates = append(updates, stateUpdate{event.StateConversationStatus, StatusOf(v)})
	}
	return updates
}

// SandboxStatusChanged records, on every conversation of the owner that uses the sandbox, its
// new status and the conversation status it implies.
func (s *Service) SandboxStatusChanged(ctx context.Context, ownerID, sandboxID string, status sandbox.Status) error {
	return s.eachOfSandbox(ctx, ownerID, sandboxID, func(v View) error {
		v.SandboxStatus = status
		return s.recordState(ctx, v.Conversation,
			stateUpdate{event.StateSandboxStatus, status}, stateUpdate{event.StateConversationStatus, StatusOf(v)})
	})
}

// restartNotice is what the agent of a conversation whose sandbox was resumed by starting its
// processes again (a backend that cannot freeze, such as Kubernetes) reads in its log.
const restartNotice = "The sandbox was paused and has been resumed by starting it again: its workspace is as it was, " +
	"but every process that ran in it ended, terminal sessions and background commands included, and files " +
	"outside the workspace are gone. Start again what you need."

// SandboxRestarted tells the agents of the owner's conversations that use the sandbox that
// its processes were started again on a resume: an environment message in each log, which
// the model reads at the next step.
func (s *Service) SandboxRestarted(ctx context.Context, ownerID, sandboxID string) error {
	return s.eachOfSandbox(ctx, ownerID, sandboxID, func(v View) error {
		ev, err := event.NewEnvironmentMessage(s.o.NewEventID(), s.o.Now(), restartNotice)
		if err != nil {
			return err
		}
		return s.record(ctx, v.Conversation, []event.Event{ev})
	})
}

// eachOfSandbox calls fn with each of the owner's conversations that use the sandbox, read
// whole (a listing leaves out the sealed request, whose secrets events are masked for).
func (s *Service) eachOfSandbox(ctx context.Context, ownerID, sandboxID string, fn func(View) error) error {
	f := Filter{SandboxID: sandboxID, IncludeSub: true}
	for q := (paging.Query{Limit: paging.MaxLimit}); ; {
		vs, next, err := s.o.Store.ListConversations(ctx, ownerID, f, q)
		if err != nil {
			return fmt.Errorf("conversations of sandbox %s: %w", sandboxID, err)
		}
		for _, listed := range vs {
			v, err := s.o.Store.GetConversation(ctx, ownerID, listed.ID)
			if err != nil {
				continue // deleted meanwhile
			}
			if err := fn(v); err != nil {
				return fmt.Errorf("conversation %s: %w", v.ID, err)
			}
		}
		if next == "" {
			return nil
		}
		q.Cursor = next
	}
}

// stateUpdate is one key of a conversation's state and its new value.
type stateUpdate struct {
	key   string
	value any
}

// recordState records the updates, in one batch, in c's log.
func (s *Service) recordState(ctx context.Context, c Conversation, updates ...stateUpdate) error {
	evs, err := s.stateEvents(updates)
	if err != nil {
		return err
	}
	return s.record(ctx, c, evs)
}

// stateEvents are the state update events of updates, in order.
func (s *Service) stateEvents(updates []stateUpdate) ([]event.Event, error) {
	evs := make([]event.Event, len(updates))
	for i, u := range updates {
		ev, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), u.key, u.value)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}
