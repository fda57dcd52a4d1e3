package storetest

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

func testConversations(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetConversation(ctx, ownerA, "conv-missing")
	is(t, "get missing conversation", err, conversation.ErrNotFound)

	c := newConversation(ownerA, "conv-1", 1)
	c.Trigger = ptr("slack")
	task := newTask(c)
	first := []event.Event{newEvent(c.ID, "ev-1", 1), newEvent(c.ID, "ev-2", 2)}
	ok(t, "create conversation", s.CreateConversation(ctx, c, task, first, conversation.Claim{}))

	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation", got, view(c, task))
	gotTask, err := s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get start task", err)
	equal(t, "start task", gotTask, task)
	evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID}, false, paging.Query{})
	ok(t, "search first events", err)
	if len(evs) != 2 || evs[0].ID != "ev-1" || evs[1].ID != "ev-2" || evs[0].Seq >= evs[1].Seq {
		t.Fatalf("first events: %+v, want ev-1 then ev-2 in Seq order", evs)
	}

	taken := newConversation(ownerA, c.ID, 2)
	is(t, "create with a taken id", s.CreateConversation(ctx, taken, conversation.StartTask{}, nil, conversation.Claim{}), conversation.ErrExists)
	takenByB := newConversation(ownerB, c.ID, 2)
	is(t, "B creates with A's id", s.CreateConversation(ctx, takenByB, conversation.StartTask{}, nil, conversation.Claim{}), conversation.ErrExists)

	// UpdateConversation writes SandboxID, Title, Metrics, LLMModel and UpdatedAt only.
	upd := c
	upd.SandboxID = "sb-new"
	upd.Title = "a new title"
	upd.Metrics = json.RawMessage(`{"accumulated_cost": 2.25, "tokens": 100}`)
	upd.LLMModel = ptr("model-b")
	upd.UpdatedAt = at(10)
	upd.SelectedRepository, upd.Version, upd.PRNumbers, upd.CreatedAt = ptr("other/repo"), conversation.V0, nil, at(50)
	ok(t, "update conversation", s.UpdateConversation(ctx, upd))
	want := c
	want.SandboxID, want.Title, want.Metrics, want.LLMModel, want.UpdatedAt = upd.SandboxID, upd.Title, upd.Metrics, upd.LLMModel, upd.UpdatedAt
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get updated conversation", err)
	equal(t, "updated conversation", got, view(want, task))

	cleared := want
	cleared.Metrics, cleared.LLMModel, cleared.UpdatedAt = nil, nil, at(11)
	ok(t, "clear metrics and model", s.UpdateConversation(ctx, cleared))
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get cleared conversation", err)
	equal(t, "cleared conversation", got, view(cleared, task))

	is(t, "update missing conversation", s.UpdateConversation(ctx, newConversation(ownerA, "conv-missing", 1)), conversation.ErrNotFound)

	// AddPRNumber appends a number once, and sets the time of the change.
	ok(t, "add a pr number", s.AddPRNumber(ctx, ownerA, c.ID, 31, at(12)))
	ok(t, "add it again", s.AddPRNumber(ctx, ownerA, c.ID, 31, at(13)))
	ok(t, "add another", s.AddPRNumber(ctx, ownerA, c.ID, 5, at(14)))
	withPRs := cleared
	withPRs.PRNumbers = append(append([]int(nil), cleared.PRNumbers...), 31, 5)
	withPRs.UpdatedAt = at(14)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation with pr numbers", err)
	equal(t, "conversation with pr numbers", got, view(withPRs, task))
	is(t, "add a pr number to a missing conversation", s.AddPRNumber(ctx, ownerA, "conv-missing", 1, at(15)), conversation.ErrNotFound)
	is(t, "B adds a pr number to A's conversation", s.AddPRNumber(ctx, ownerB, c.ID, 1, at(15)), conversation.ErrNotFound)

	// A conversation stored without a list gets one.
	bare := newConversation(ownerA, "conv-no-prs", 3)
	bare.PRNumbers = nil
	ok(t, "create conversation without pr numbers", s.CreateConversation(ctx, bare, conversation.StartTask{}, nil, conversation.Claim{}))
	ok(t, "add its first pr number", s.AddPRNumber(ctx, ownerA, bare.ID, 2, at(16)))
	got, err = s.GetConversation(ctx, ownerA, bare.ID)
	ok(t, "get it", err)
	if len(got.PRNumbers) != 1 || got.PRNumbers[0] != 2 {
		t.Fatalf("pr numbers %v, want [2]", got.PRNumbers)
	}
}

func testConversationOwnership(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-a", 1)
	task := createConversation(t, s, c)
	ok(t, "append event", s.AppendEvents(ctx, []event.Event{newEvent(c.ID, "ev-a", 1)}))

	_, err := s.GetConversation(ctx, ownerB, c.ID)
	is(t, "B gets A's conversation", err, conversation.ErrNotFound)
	vs, next, err := s.ListConversations(ctx, ownerB, conversation.Filter{IncludeSub: true}, paging.Query{})
	ok(t, "B lists", err)
	if len(vs) != 0 || next != "" {
		t.Fatalf("B lists %d conversations, want none", len(vs))
	}
	n, err := s.CountConversations(ctx, ownerB, conversation.Filter{IncludeSub: true})
	ok(t, "B counts", err)
	if n != 0 {
		t.Fatalf("B counts %d conversations, want 0", n)
	}

	byB := c
	byB.OwnerID = ownerB
	byB.Title = "stolen"
	is(t, "B updates A's conversation", s.UpdateConversation(ctx, byB), conversation.ErrNotFound)
	is(t, "B deletes A's conversation", s.DeleteConversation(ctx, ownerB, c.ID), conversation.ErrNotFound)

	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "A gets its conversation", err)
	equal(t, "A's conversation after B's attempts", got, view(c, task))
	n, err = s.CountEvents(ctx, ownerA, event.Filter{ConversationID: c.ID})
	ok(t, "count A's events", err)
	if n != 1 {
		t.Fatalf("A's events after B's attempts: %d, want 1", n)
	}
}

func testConversationView(t *testing.T, s store.Store) {
	ctx := t.Context()
	sb := newSandbox(ownerA, "sb-1", 1, sandbox.StatusPaused)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))

	withSandbox := newConversation(ownerA, "conv-sb", 1)
	withSandbox.SandboxID = sb.ID
	task := createConversation(t, s, withSandbox)
	want := view(withSandbox, task)
	want.SandboxStatus = sandbox.StatusPaused
	want.SandboxKeySealed = sb.SessionKeySealed
	got, err := s.GetConversation(ctx, ownerA, withSandbox.ID)
	ok(t, "get conversation with a sandbox", err)
	equal(t, "conversation with a sandbox", got, want)

	// The task's status and detail follow UpdateStartTask.
	task.Status, task.Detail, task.UpdatedAt = conversation.TaskError, "sandbox would not start", at(3)
	ok(t, "update start task", s.UpdateStartTask(ctx, task))
	want.TaskStatus, want.TaskDetail = task.Status, task.Detail
	got, err = s.GetConversation(ctx, ownerA, withSandbox.ID)
	ok(t, "get conversation after its task failed", err)
	equal(t, "conversation whose task failed", got, want)

	// A sandbox id that names no sandbox is MISSING, as is no sandbox at all.
	gone := newConversation(ownerA, "conv-gone", 2)
	gone.SandboxID = "sb-never-created"
	goneTask := createConversation(t, s, gone)

	// No start task: empty task status and detail.
	bare := newConversation(ownerA, "conv-bare", 3)
	bare.SelectedRepository, bare.SelectedBranch, bare.GitProvider, bare.LLMModel = nil, nil, nil, nil
	bare.PRNumbers, bare.Metrics, bare.RequestSealed = nil, nil, nil
	bare.SecretNames, bare.SecretsSealed = nil, nil
	ok(t, "create conversation without a task", s.CreateConversation(ctx, bare, conversation.StartTask{}, nil, conversation.Claim{}))
	wantBare := conversation.View{Conversation: bare, SandboxStatus: sandbox.StatusMissing}

	vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, paging.Query{})
	ok(t, "list conversations", err)
	// Listings leave the sealed request out (GetConversation has it), not the sealed secrets.
	listed := []conversation.View{wantBare, view(gone, goneTask), want}
	for i := range listed {
		listed[i].RequestSealed = nil
	}
	equal(t, "listed views", vs, listed)
}

func testCreateConversationAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	existing := newConversation(ownerA, "conv-1", 1)
	existingTask := newTask(existing)
	ok(t, "create conversation", s.CreateConversation(ctx, existing, existingTask, []event.Event{newEvent(existing.ID, "ev-taken", 1)}, conversation.Claim{}))

	absent := func(c conversation.Conversation, task conversation.StartTask, evIDs ...string) {
		t.Helper()
		_, err := s.GetConversation(ctx, c.OwnerID, c.ID)
		is(t, "conversation of a failed create", err, conversation.ErrNotFound)
		_, err = s.GetStartTask(ctx, c.OwnerID, task.ID)
		is(t, "start task of a failed create", err, conversation.ErrNotFound)
		got, err := s.GetEvents(ctx, c.OwnerID, evIDs)
		ok(t, "get events", err)
		for i, e := range got {
			if e != nil {
				t.Fatalf("event %s of a failed create was stored", evIDs[i])
			}
		}
	}

	c := newConversation(ownerA, "conv-2", 2)
	task := newTask(c)
	err := s.CreateConversation(ctx, c, task, []event.Event{newEvent(c.ID, "ev-new", 2), newEvent(c.ID, "ev-taken", 3)}, conversation.Claim{})
	fails(t, "create with a taken event id", err)
	absent(c, task, "ev-new")

	err = s.CreateConversation(ctx, c, task, []event.Event{newEvent(c.ID, "ev-twice", 2), newEvent(c.ID, "ev-twice", 3)}, conversation.Claim{})
	fails(t, "create with one event id twice", err)
	absent(c, task, "ev-twice")

	clash := task
	clash.ID = existingTask.ID
	err = s.CreateConversation(ctx, c, clash, []event.Event{newEvent(c.ID, "ev-new", 2)}, conversation.Claim{})
	fails(t, "create with a taken start task id", err)
	absent(c, task, "ev-new")
	got, err := s.GetStartTask(ctx, ownerA, existingTask.ID)
	ok(t, "get the existing task", err)
	equal(t, "existing task after a clash", got, existingTask)

	n, err := s.CountConversations(ctx, ownerA, conversation.Filter{IncludeSub: true})
	ok(t, "count conversations", err)
	if n != 1 {
		t.Fatalf("conversations after failed creates: %d, want 1", n)
	}
	ok(t, "create after the failures", s.CreateConversation(ctx, c, task, []event.Event{newEvent(c.ID, "ev-new", 2)}, conversation.Claim{}))
}

func testDeleteConversation(t *testing.T, s store.Store) {
	ctx := t.Context()
	keep := newConversation(ownerA, "conv-keep", 1)
	keepTask := newTask(keep)
	ok(t, "create conversation", s.CreateConversation(ctx, keep, keepTask, []event.Event{newEvent(keep.ID, "ev-keep", 1)}, conversation.Claim{}))
	c := newConversation(ownerA, "conv-del", 2)
	task := newTask(c)
	ok(t, "create conversation", s.CreateConversation(ctx, c, task, []event.Event{newEvent(c.ID, "ev-del-1", 2)}, conversation.Claim{}))
	ok(t, "append event", s.AppendEvents(ctx, []event.Event{newEvent(c.ID, "ev-del-2", 3)}))

	ok(t, "delete conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	_, err := s.GetConversation(ctx, ownerA, c.ID)
	is(t, "get deleted conversation", err, conversation.ErrNotFound)
	_, err = s.GetStartTask(ctx, ownerA, task.ID)
	is(t, "get task of deleted conversation", err, conversation.ErrNotFound)
	n, err := s.CountEvents(ctx, ownerA, event.Filter{ConversationID: c.ID})
	ok(t, "count events of deleted conversation", err)
	if n != 0 {
		t.Fatalf("events of deleted conversation: %d, want 0", n)
	}
	evs, err := s.GetEvents(ctx, ownerA, []string{"ev-del-1", "ev-keep", "ev-del-2"})
	ok(t, "get events", err)
	if evs[0] != nil || evs[1] == nil || evs[2] != nil {
		t.Fatalf("events after delete: %v, want only ev-keep", evs)
	}
	is(t, "delete deleted conversation", s.DeleteConversation(ctx, ownerA, c.ID), conversation.ErrNotFound)

	got, err := s.GetConversation(ctx, ownerA, keep.ID)
	ok(t, "get the other conversation", err)
	equal(t, "the other conversation", got, view(keep, keepTask))
	tasks, _, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, conversation.SortCreatedAt, paging.Query{})
	ok(t, "list start tasks", err)
	equal(t, "start tasks after delete", tasks, []conversation.StartTask{keepTask})
}
