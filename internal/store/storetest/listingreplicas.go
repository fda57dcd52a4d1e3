package storetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// testListingsSeeOtherWriters: what another store on the same data writes (another replica,
// another process), a store's listings show at once, whatever they keep of what they listed
// before. Every listing is read through s before each change made through other, and twice
// after it; each time, every row listed is what s reads of it alone (its Get), and the
// change shows.
func testListingsSeeOtherWriters(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	c0, c1 := newConversation(ownerA, "conv-0", 1), newConversation(ownerA, "conv-1", 2)
	c0.SandboxID, c1.SandboxID = "sb-0", "sb-1"
	createConversation(t, s, c0)
	task1 := createConversation(t, s, c1)
	sb0, sb1 := newSandbox(ownerA, "sb-0", 1, sandbox.StatusRunning), newSandbox(ownerA, "sb-1", 2, sandbox.StatusRunning)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb0, 0))
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb1, 0))
	ok(t, "append events", s.AppendEvents(ctx, []event.Event{newEvent(c0.ID, "ev-0", 0), newEvent(c0.ID, "ev-1", 1)}))

	page := paging.Query{Limit: 100}
	// agree lists everything through s, twice, and checks each row listed against what s
	// reads of it alone; it returns the conversations, start tasks, sandboxes and events of
	// c0 as listed.
	type listings struct {
		convs   map[string]conversation.View
		tasks   map[string]conversation.StartTask
		sbs     map[string]sandbox.Sandbox
		events  []string
		ownerEv int
	}
	agree := func(what string) listings {
		t.Helper()
		var l listings
		for range 2 {
			l = listings{convs: map[string]conversation.View{}, tasks: map[string]conversation.StartTask{}, sbs: map[string]sandbox.Sandbox{}}
			vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{IncludeSub: true}, page)
			ok(t, what+": list conversations", err)
			for _, v := range vs {
				got, err := s.GetConversation(ctx, ownerA, v.ID)
				ok(t, what+": get conversation "+v.ID, err)
				got.RequestSealed = nil // a listing does not read it
				equal(t, what+": listed conversation "+v.ID, v, got)
				if v.Rev != got.Rev {
					t.Fatalf("%s: conversation %s listed at rev %d, read alone at rev %d", what, v.ID, v.Rev, got.Rev)
				}
				l.convs[v.ID] = v
			}
			for _, sort := range []conversation.TaskSort{conversation.SortCreatedAtDesc, conversation.SortUpdatedAt} {
				ts, _, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, sort, page)
				ok(t, what+": list start tasks", err)
				for _, task := range ts {
					got, err := s.GetStartTask(ctx, ownerA, task.ID)
					ok(t, what+": get start task "+task.ID, err)
					equal(t, what+": listed start task "+task.ID, task, got)
					if task.Rev != got.Rev {
						t.Fatalf("%s: start task %s listed at rev %d, read alone at rev %d", what, task.ID, task.Rev, got.Rev)
					}
					l.tasks[task.ID] = task
				}
			}
			sbs, _, err := s.ListSandboxes(ctx, ownerA, page)
			ok(t, what+": list sandboxes", err)
			for _, sb := range sbs {
				got, err := s.GetSandbox(ctx, ownerA, sb.ID)
				ok(t, what+": get sandbox "+sb.ID, err)
				got.Instance = sandbox.Instance{} // a listing does not read it
				equal(t, what+": listed sandbox "+sb.ID, sb, got)
				l.sbs[sb.ID] = sb
			}
			evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c0.ID}, false, page)
			ok(t, what+": list events", err)
			log, err := s.ConversationEvents(ctx, c0.ID, 0)
			ok(t, what+": read the log", err)
			if len(evs) > 0 || len(log) > 0 {
				equal(t, what+": listed events", evs, log)
			}
			l.events = ids(evs, func(e event.Event) string { return e.ID })
			all, _, err := s.SearchEvents(ctx, ownerA, event.Filter{}, true, page)
			ok(t, what+": list the owner's events", err)
			n, err := s.CountEvents(ctx, ownerA, event.Filter{})
			ok(t, what+": count the owner's events", err)
			if len(all) != n {
				t.Fatalf("%s: listed %d of the owner's events, counted %d", what, len(all), n)
			}
			l.ownerEv = n
		}
		return l
	}
	// shows fails the test unless cond holds of what s lists after other made a change, and
	// unless every conversation and start task listed differently has a new rev (by which the
	// API keeps their encodings: see conversation.View.Rev).
	var last listings
	shows := func(what string, change error, cond func(l listings) bool) {
		t.Helper()
		ok(t, what, change)
		l := agree("after " + what)
		if !cond(l) {
			t.Fatalf("after %s through another store, the listings do not show it: %+v", what, l)
		}
		newRevs(t, "after "+what+" through another store, conversation", last.convs, l.convs, func(v conversation.View) int64 { return v.Rev })
		newRevs(t, "after "+what+" through another store, start task", last.tasks, l.tasks, func(task conversation.StartTask) int64 { return task.Rev })
		last = l
	}

	last = agree("before any change")
	shows("an agent step", func() error {
		_, err := other.RecordEvents(ctx, c0.ID, []event.Event{newEvent(c0.ID, "ev-2", 2)},
			conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: at(50)})
		return err
	}(), func(l listings) bool {
		return l.convs[c0.ID].ExecutionStatus == "running" && slices.Equal(l.events, []string{"ev-0", "ev-1", "ev-2"}) && l.ownerEv == 3
	})
	shows("a rename", other.PatchConversation(ctx, ownerA, c1.ID, conversation.Patch{Title: ptr("renamed")}, at(51)),
		func(l listings) bool { return l.convs[c1.ID].Title == "renamed" })
	shows("a generated title", func() error {
		_, err := other.SetGeneratedTitle(ctx, ownerA, c0.ID, "generated", at(52))
		return err
	}(), func(l listings) bool { return l.convs[c0.ID].Title == "generated" })
	paused := sb0
	paused.Status, paused.Detail, paused.UpdatedAt = sandbox.StatusPaused, "paused", at(53)
	shows("a sandbox's pause", other.UpdateSandbox(ctx, paused, sandbox.StatusRunning), func(l listings) bool {
		return l.convs[c0.ID].SandboxStatus == sandbox.StatusPaused && l.sbs[sb0.ID].Status == sandbox.StatusPaused
	})
	shows("a sandbox's use", other.TouchSandboxes(ctx, []string{sb1.ID}, at(54)),
		func(l listings) bool { return l.sbs[sb1.ID].ActiveAt.Equal(at(54)) })
	ready := task1
	ready.Status, ready.Detail, ready.UpdatedAt = conversation.TaskReady, "", at(55)
	shows("a start task's end", other.UpdateStartTask(ctx, ready), func(l listings) bool {
		return l.convs[c1.ID].TaskStatus == conversation.TaskReady && l.tasks[task1.ID].Status == conversation.TaskReady
	})
	shows("a reseal", other.Reseal(ctx, func(v []byte) ([]byte, error) { return append([]byte("v2:"), v...), nil }),
		func(l listings) bool {
			return string(l.convs[c0.ID].SandboxKeySealed) == "v2:"+string(sb0.SessionKeySealed) &&
				string(l.convs[c0.ID].SecretsSealed) == "v2:"+string(c0.SecretsSealed) &&
				string(l.sbs[sb1.ID].SessionKeySealed) == "v2:"+string(sb1.SessionKeySealed)
		})
	shows("a sandbox's deletion", other.DeleteSandbox(ctx, sb1.ID), func(l listings) bool {
		_, listed := l.sbs[sb1.ID]
		return l.convs[c1.ID].SandboxStatus == sandbox.StatusMissing && !listed
	})
	again := newSandbox(ownerA, sb1.ID, 3, sandbox.StatusStarting)
	shows("a sandbox's creation", other.CreateSandbox(ctx, again, 0),
		func(l listings) bool { return l.convs[c1.ID].SandboxStatus == sandbox.StatusStarting })
	moved, err := other.GetConversation(ctx, ownerA, c0.ID)
	ok(t, "get conversation", err)
	moved.SandboxID, moved.UpdatedAt = again.ID, at(56)
	shows("a conversation's new sandbox", other.UpdateConversation(ctx, moved.Conversation),
		func(l listings) bool { return l.convs[c0.ID].SandboxStatus == sandbox.StatusStarting })
	c2 := newConversation(ownerA, "conv-2", 3)
	shows("a new conversation", other.CreateConversation(ctx, c2, newTask(c2), nil, conversation.Claim{}), func(l listings) bool {
		_, task := l.tasks[newTask(c2).ID]
		return l.convs[c2.ID].ID == c2.ID && task
	})
	shows("a conversation's deletion", other.DeleteConversation(ctx, ownerA, c0.ID), func(l listings) bool {
		_, listed := l.convs[c0.ID]
		return !listed && len(l.events) == 0 && l.ownerEv == 0
	})
}

// newRevs fails the test unless every row of now listed differently in before has a new rev.
func newRevs[T any](t *testing.T, what string, before, now map[string]T, rev func(T) int64) {
	t.Helper()
	for id, row := range now {
		was, listed := before[id]
		if listed && rev(row) == rev(was) && !bytes.Equal(canonical(t, row), canonical(t, was)) {
			t.Fatalf("%s %s is listed differently at the same rev %d:\n now %s\nbefore %s", what, id, rev(row), canonical(t, row), canonical(t, was))
		}
	}
}
