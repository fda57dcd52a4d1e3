package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// recordEvents is RecordEvents for the tests that do not look at the last event before evs.
func recordEvents(s store.Store, ctx context.Context, conversationID string, evs []event.Event, u conversation.StateUpdate) error {
	_, err := s.RecordEvents(ctx, conversationID, evs, u)
	return err
}

// testRecordEvents: events and the agent's state on the conversation change together.
func testRecordEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-1", 1)
	task := createConversation(t, s, c)

	obs := newEvent("", "e1", 1)
	obs.LLMText = "[Command finished with exit code 0]"
	evs := []event.Event{obs, newEvent("", "e2", 2)}
	metrics := json.RawMessage(`{"model_name": "model-a", "accumulated_cost": 1.25}`)
	prev, err := s.RecordEvents(ctx, c.ID, evs, conversation.StateUpdate{
		ExecutionStatus: "running", Metrics: metrics, UpdatedAt: at(5)})
	ok(t, "record events", err)
	if evs[0].Seq <= 0 || evs[1].Seq <= evs[0].Seq || evs[0].ConversationID != c.ID {
		t.Fatalf("recorded events not numbered in order or not adopted: %+v", evs)
	}
	if prev != 0 {
		t.Fatalf("first record: last event before it %d, want 0 (none)", prev)
	}
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	c.ExecutionStatus, c.Metrics, c.UpdatedAt = "running", metrics, at(5)
	equal(t, "conversation after record", got, view(c, task))

	// The confirmation policy is kept whole; a later record without one leaves it.
	medium := confirm.Policy{Kind: confirm.KindRisky, Threshold: confirm.Medium}
	ok(t, "record policy", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{ConfirmationPolicy: &medium}))
	c.ConfirmationPolicy = medium
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation after the policy", got, view(c, task))

	// The node a conversation waits for is set, kept by records without it, and cleared.
	node := "node-b"
	ok(t, "record waiting", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{WaitingForNode: &node}))
	ok(t, "record without waiting", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{ExecutionStatus: "running"}))
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	c.WaitingForNode = node
	equal(t, "conversation waiting for its node", got, view(c, task))
	ok(t, "record no longer waiting", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{WaitingForNode: new(string)}))
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	c.WaitingForNode = ""
	equal(t, "conversation no longer waiting", got, view(c, task))

	// Zero fields leave the conversation as it is. The last event before this one is e2,
	// whatever other conversations logged since.
	other := newConversation(ownerA, "conv-other", 2)
	createConversation(t, s, other)
	ok(t, "record to another conversation", recordEvents(s, ctx, other.ID, []event.Event{newEvent("", "e-other", 3)}, conversation.StateUpdate{}))
	prev, err = s.RecordEvents(ctx, c.ID, []event.Event{newEvent("", "e3", 3)}, conversation.StateUpdate{})
	ok(t, "record without update", err)
	if prev != evs[1].Seq {
		t.Fatalf("last event before e3: %d, want e2's %d", prev, evs[1].Seq)
	}
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation after plain record", got, view(c, task))

	read, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "conversation events", err)
	equal(t, "conversation events", ids(read, func(e event.Event) string { return e.ID }), []string{"e1", "e2", "e3"})
	if read[0].LLMText != obs.LLMText || read[1].LLMText != "" {
		t.Fatalf("llm text not kept: %q, %q", read[0].LLMText, read[1].LLMText)
	}
	after, err := s.ConversationEvents(ctx, c.ID, read[0].Seq)
	ok(t, "conversation events after", err)
	equal(t, "events after the first", ids(after, func(e event.Event) string { return e.ID }), []string{"e2", "e3"})
	none, err := s.ConversationEvents(ctx, "conv-missing", 0)
	ok(t, "events of a missing conversation", err)
	if len(none) != 0 {
		t.Fatalf("events of a missing conversation: %v", none)
	}

	is(t, "record to a missing conversation", recordEvents(s, ctx, "conv-missing",
		[]event.Event{newEvent("", "e-lost", 4)}, conversation.StateUpdate{ExecutionStatus: "idle"}), conversation.ErrNotFound)
	is(t, "update a missing conversation", recordEvents(s, ctx, "conv-missing", nil,
		conversation.StateUpdate{ExecutionStatus: "idle"}), conversation.ErrNotFound)

	// A failed append changes nothing: an event id is used twice.
	err = recordEvents(s, ctx, c.ID, []event.Event{newEvent("", "e4", 4), newEvent("", "e1", 5)},
		conversation.StateUpdate{ExecutionStatus: "finished"})
	if err == nil {
		t.Fatal("record with a duplicate event id succeeded")
	}
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	if got.ExecutionStatus != "running" {
		t.Fatalf("failed record changed the status to %q", got.ExecutionStatus)
	}
	read, err = s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "conversation events", err)
	if len(read) != 3 {
		t.Fatalf("failed record appended: %v", ids(read, func(e event.Event) string { return e.ID }))
	}
}

// testExecutionStatusQueries: a restarted server finds every owner's running agents.
func testExecutionStatusQueries(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, status := range []string{"running", "finished", ""} {
		owner := ownerA
		if i == 1 {
			owner = ownerB
		}
		c := newConversation(owner, fmt.Sprintf("conv-%d", i), i)
		createConversation(t, s, c)
		ok(t, "set status", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{ExecutionStatus: status}))
	}
	c := newConversation(ownerB, "conv-created-running", 9)
	c.ExecutionStatus = "running"
	createConversation(t, s, c)
	running, err := s.ConversationsByExecutionStatus(ctx, "running")
	ok(t, "running conversations", err)
	equal(t, "running conversations", ids(running, func(c conversation.Conversation) string { return c.ID }),
		[]string{"conv-0", "conv-created-running"})
	finished, err := s.ConversationsByExecutionStatus(ctx, "finished")
	ok(t, "finished conversations", err)
	if len(finished) != 1 || finished[0].OwnerID != ownerB || finished[0].ExecutionStatus != "finished" {
		t.Fatalf("finished conversations: %+v", finished)
	}
}

// testEventSourceFilter: searches and counts filter by source.
func testEventSourceFilter(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-1", 1)
	createConversation(t, s, c)
	var evs []event.Event
	for i, src := range []string{event.SourceUser, event.SourceAgent, event.SourceEnvironment, event.SourceAgent} {
		e := newEvent(c.ID, fmt.Sprintf("e%d", i), i)
		e.Source = src
		evs = append(evs, e)
	}
	ok(t, "append", s.AppendEvents(ctx, evs))
	found, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID, Source: event.SourceAgent}, false, paging.Query{Limit: 10})
	ok(t, "search by source", err)
	equal(t, "agent events", ids(found, func(e event.Event) string { return e.ID }), []string{"e1", "e3"})
	n, err := s.CountEvents(ctx, ownerA, event.Filter{Source: event.SourceEnvironment})
	ok(t, "count by source", err)
	if n != 1 {
		t.Fatalf("environment events: %d, want 1", n)
	}
}

// testRecordTaskStep: a start task's step, the conversation's sandbox and the events that
// record them are written together; a task that is not the conversation's (another's, or
// another owner's) fails the append, which then writes nothing.
func testRecordTaskStep(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-step", 1)
	task := createConversation(t, s, c)
	other := newConversation(ownerA, "conv-step-other", 2)
	otherTask := createConversation(t, s, other)

	step := task
	step.Status, step.Detail, step.SandboxID, step.UpdatedAt = conversation.TaskWaitingForSandbox, "", "sb-step", at(7)
	ok(t, "record a step", recordEvents(s, ctx, c.ID, []event.Event{newEvent("", "e-step", 7)},
		conversation.StateUpdate{Task: &step, SandboxID: "sb-step", UpdatedAt: at(7)}))
	gotTask, err := s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get start task", err)
	equal(t, "task after its step", gotTask, step)
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	if got.SandboxID != "sb-step" || got.TaskStatus != conversation.TaskWaitingForSandbox || !got.UpdatedAt.Equal(at(7)) {
		t.Fatalf("conversation after the step: sandbox %q, task status %s, updated %v", got.SandboxID, got.TaskStatus, got.UpdatedAt)
	}

	// Another conversation's task, and the task under another owner, are not found.
	wrong := otherTask
	wrong.Status, wrong.UpdatedAt = conversation.TaskReady, at(8)
	is(t, "record another conversation's task", recordEvents(s, ctx, c.ID, []event.Event{newEvent("", "e-wrong", 8)},
		conversation.StateUpdate{Task: &wrong, SandboxID: "sb-wrong", ExecutionStatus: "running", UpdatedAt: at(8)}), conversation.ErrNotFound)
	stranger := step
	stranger.OwnerID, stranger.Status = ownerB, conversation.TaskReady
	is(t, "record the task as another owner's", recordEvents(s, ctx, c.ID, []event.Event{newEvent("", "e-stranger", 9)},
		conversation.StateUpdate{Task: &stranger, UpdatedAt: at(9)}), conversation.ErrNotFound)
	after, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation after the refused steps", after, got)
	gotTask, err = s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get start task", err)
	equal(t, "task after the refused steps", gotTask, step)
	gotOther, err := s.GetStartTask(ctx, ownerA, otherTask.ID)
	ok(t, "get the other task", err)
	equal(t, "the other conversation's task", gotOther, otherTask)
	read, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "conversation events", err)
	equal(t, "events after the refused steps", ids(read, func(e event.Event) string { return e.ID }), []string{"e-step"})
}
