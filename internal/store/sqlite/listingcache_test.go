package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// rowReads counts the reads of whole rows: the statements that select column.
type rowReads struct {
	column string
	mu     sync.Mutex
	n      int
}

func (r *rowReads) trace(q string, _ []driver.NamedValue) {
	if strings.Contains(q, r.column) && strings.HasPrefix(strings.TrimSpace(q), "SELECT") {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}
}

func (r *rowReads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// appendNumbered appends n events with bodies of 100 bytes to conversation conv.
func appendNumbered(t *testing.T, s *Store, conv string, n int) []event.Event {
	t.Helper()
	evs := make([]event.Event, n)
	for i := range evs {
		id := fmt.Sprintf("%s-e%03d", conv, i)
		evs[i] = event.Event{ID: id, ConversationID: conv, Kind: "MessageEvent", Source: "agent",
			Body: fmt.Appendf(nil, `{"id":%q,"pad":%q}`, id, strings.Repeat("x", 100-len(id)-17))}
	}
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestListedEventsAreReadOnce: a page listed again is read as its sequence numbers alone, and
// what it returns is what the database holds.
func TestListedEventsAreReadOnce(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{column: "e.body"}
	s, _ := storeWithConversations(t, Options{trace: reads.trace}, "c1")
	want := appendNumbered(t, s, "c1", 30)
	search := func(q paging.Query) ([]event.Event, string) {
		t.Helper()
		evs, next, err := s.SearchEvents(ctx, "u1", event.Filter{ConversationID: "c1"}, false, q)
		if err != nil {
			t.Fatal(err)
		}
		return evs, next
	}
	first, next := search(paging.Query{Limit: 10})
	if reads.count() != 1 {
		t.Fatalf("the first listing read rows %d times, want 1", reads.count())
	}
	for range 3 {
		again, againNext := search(paging.Query{Limit: 10})
		if !slices.EqualFunc(first, again, sameEvent) || againNext != next {
			t.Fatalf("listed again: %v, next %q; first: %v, next %q", again, againNext, first, next)
		}
	}
	if reads.count() != 1 {
		t.Fatalf("listing the page again read rows %d times in all, want 1", reads.count())
	}
	for i, e := range first {
		if e.Seq == 0 || e.ID != want[i].ID || string(e.Body) != string(want[i].Body) || e.Kind != "MessageEvent" || e.Source != "agent" || e.ConversationID != "c1" {
			t.Fatalf("event %d: %+v, want %+v", i, e, want[i])
		}
	}
	// A page that overlaps the first reads only the events it lacks.
	second, _ := search(paging.Query{Limit: 15})
	if reads.count() != 2 || len(second) != 15 || second[14].ID != want[14].ID {
		t.Fatalf("a longer page: %d events, rows read %d times in all, want 15 and 2", len(second), reads.count())
	}
	// The events of a deleted conversation are no longer listed.
	if err := s.DeleteConversation(ctx, "u1", "c1"); err != nil {
		t.Fatal(err)
	}
	if gone, next := search(paging.Query{Limit: 10}); len(gone) != 0 || next != "" {
		t.Fatalf("after the conversation's deletion: %d events, next %q", len(gone), next)
	}
	// ReleaseMemory empties the cache.
	if s.listings.Len() == 0 {
		t.Fatal("the cache is empty before ReleaseMemory")
	}
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	if n := s.listings.Len(); n != 0 {
		t.Fatalf("ReleaseMemory left %d events in the cache", n)
	}
}

func sameEvent(a, b event.Event) bool {
	return a.Seq == b.Seq && a.ID == b.ID && a.ConversationID == b.ConversationID && a.Kind == b.Kind &&
		a.Source == b.Source && a.Timestamp.Equal(b.Timestamp) && string(a.Body) == string(b.Body) && a.LLMText == b.LLMText
}

// TestListedTasksAreReadAgainOnlyOnceChanged: a page of start tasks listed again is read as
// their versions alone, but for a task updated since, which is read again and returned as it
// is now, in either order of the listing.
func TestListedTasksAreReadAgainOnlyOnceChanged(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{column: "request"}
	s, t0 := storeWithConversations(t, Options{trace: reads.trace})
	var tasks []conversation.StartTask
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Second)
		c := conversation.Conversation{ID: fmt.Sprint("c", i), OwnerID: "u1", Version: conversation.V1, CreatedAt: at, UpdatedAt: at}
		task := conversation.StartTask{ID: fmt.Sprint("t", i), OwnerID: "u1", ConversationID: c.ID, Status: conversation.TaskWorking,
			Request: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), CreatedAt: at, UpdatedAt: at}
		if err := s.CreateConversation(ctx, c, task, nil, conversation.Claim{}); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	list := func(sort conversation.TaskSort) []conversation.StartTask {
		t.Helper()
		ts, _, err := s.ListStartTasks(ctx, "u1", conversation.TaskFilter{}, sort, paging.Query{Limit: 10})
		if err != nil || len(ts) != 5 {
			t.Fatalf("%d tasks, %v", len(ts), err)
		}
		return ts
	}
	first := list(conversation.SortCreatedAt)
	again := list(conversation.SortCreatedAt)
	if reads.count() != 1 {
		t.Fatalf("two listings read rows %d times, want 1", reads.count())
	}
	for i, task := range again {
		if task.ID != tasks[i].ID || task.Status != conversation.TaskWorking || string(task.Request) != string(tasks[i].Request) ||
			!task.CreatedAt.Equal(tasks[i].CreatedAt) || task.ConversationID != tasks[i].ConversationID || task.OwnerID != "u1" {
			t.Fatalf("task %d listed again: %+v, want %+v", i, task, first[i])
		}
	}
	// An update, even one that keeps every listed field and its time, is seen.
	upd := tasks[2]
	upd.Status, upd.Detail, upd.SandboxID = conversation.TaskReady, "ready", "sb2"
	for range 2 {
		if err := s.UpdateStartTask(ctx, upd); err != nil {
			t.Fatal(err)
		}
		got := list(conversation.SortUpdatedAtDesc)
		var seen bool
		for _, task := range got {
			if task.ID == upd.ID {
				seen = task.Status == conversation.TaskReady && task.Detail == "ready" && task.SandboxID == "sb2"
			}
		}
		if !seen {
			t.Fatalf("the updated task is not listed as updated: %+v", got)
		}
	}
	if reads.count() != 3 {
		t.Fatalf("rows read %d times after two updates, want 3", reads.count())
	}
	if again := list(conversation.SortCreatedAt); again[2].Status != conversation.TaskReady || reads.count() != 3 {
		t.Fatalf("listed after the update: %+v, rows read %d times", again[2], reads.count())
	}
}

// TestListingCacheOff: with a negative budget every listing reads its rows.
func TestListingCacheOff(t *testing.T) {
	reads := &rowReads{column: "e.body"}
	s, _ := storeWithConversations(t, Options{trace: reads.trace, ListingCacheBytes: -1}, "c1")
	appendNumbered(t, s, "c1", 5)
	for range 2 {
		evs, _, err := s.SearchEvents(t.Context(), "u1", event.Filter{ConversationID: "c1"}, false, paging.Query{Limit: 10})
		if err != nil || len(evs) != 5 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
	}
	if s.listings != nil || reads.count() != 2 {
		t.Fatalf("rows read %d times for 2 listings without a cache", reads.count())
	}
}

// TestListedSandboxesAreReadAgainOnlyOnceChanged: a page of sandboxes listed again is read as
// their versions alone, but for a sandbox changed since by any statement, even one that
// leaves its update time (the trigger of migration 0012 counts every update).
func TestListedSandboxesAreReadAgainOnlyOnceChanged(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{column: "session_key_sealed"}
	s, t0 := storeWithConversations(t, Options{trace: reads.trace})
	for i := range 4 {
		at := t0.Add(time.Duration(i) * time.Second)
		sb := sandbox.Sandbox{ID: fmt.Sprint("sb", i), OwnerID: "u1", SpecID: "spec", Backend: "process", Status: sandbox.StatusRunning,
			SessionKeySealed: []byte{1, 2, byte(i)}, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateSandbox(ctx, sb, 0); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []sandbox.Sandbox {
		t.Helper()
		sbs, _, err := s.ListSandboxes(ctx, "u1", paging.Query{Limit: 10})
		if err != nil || len(sbs) != 4 {
			t.Fatalf("%d sandboxes, %v", len(sbs), err)
		}
		return sbs
	}
	list()
	again := list()
	if reads.count() != 1 || again[0].ID != "sb3" || string(again[0].SessionKeySealed) != "\x01\x02\x03" || again[0].Status != sandbox.StatusRunning {
		t.Fatalf("listed again (rows read %d times): %+v", reads.count(), again[0])
	}
	// A statement that changes neither the status nor the update time.
	if err := s.SetSessionKeyHash(ctx, "sb3", []byte("hash")); err != nil {
		t.Fatal(err)
	}
	list()
	if reads.count() != 2 {
		t.Fatalf("rows read %d times after a change, want 2", reads.count())
	}
	upd := again[1]
	upd.Status, upd.Detail = sandbox.StatusPaused, "paused"
	if err := s.UpdateSandbox(ctx, upd, sandbox.StatusRunning); err != nil {
		t.Fatal(err)
	}
	if got := list(); got[1].Status != sandbox.StatusPaused || got[1].Detail != "paused" || reads.count() != 3 {
		t.Fatalf("after an update (rows read %d times): %+v", reads.count(), got[1])
	}
}

// TestListedConversationsAreReadAgainOnlyOnceChanged: a conversation listed again is read
// again only after a change of something its listing shows: its own row (by an agent step,
// which sets rev itself, or by any other statement), its sandbox's status or session key, the
// sandbox's creation or deletion, or its latest start task.
func TestListedConversationsAreReadAgainOnlyOnceChanged(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{column: "c.secrets_sealed"}
	s, t0 := storeWithConversations(t, Options{trace: reads.trace})
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Second)
		c := conversation.Conversation{ID: fmt.Sprint("c", i), OwnerID: "u1", Version: conversation.V1, SandboxID: fmt.Sprint("sb", i),
			Title: fmt.Sprint("title ", i), Tags: map[string]string{"n": fmt.Sprint(i)}, CreatedAt: at, UpdatedAt: at}
		task := conversation.StartTask{ID: fmt.Sprint("t", i), Status: conversation.TaskWorking, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateConversation(ctx, c, task, nil, conversation.Claim{}); err != nil {
			t.Fatal(err)
		}
		if i < 2 { // c2's sandbox comes later
			sb := sandbox.Sandbox{ID: c.SandboxID, OwnerID: "u1", SpecID: "spec", Backend: "process", Status: sandbox.StatusRunning,
				SessionKeySealed: []byte{1, 2, byte(i)}, CreatedAt: at, UpdatedAt: at}
			if err := s.CreateSandbox(ctx, sb, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// list lists the conversations, newest first, and returns c<i>.
	list := func(i int) conversation.View {
		t.Helper()
		vs, _, err := s.ListConversations(ctx, "u1", conversation.Filter{}, paging.Query{Limit: 10})
		if err != nil || len(vs) != 3 {
			t.Fatalf("%d conversations, %v", len(vs), err)
		}
		return vs[2-i]
	}
	// changed makes a change and checks that the next listing reads rows once and shows it.
	changed := func(what string, change func() error, i int, shows func(conversation.View) bool) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		before := reads.count()
		if v := list(i); !shows(v) || reads.count() != before+1 {
			t.Fatalf("after %s, read rows %d times: %+v", what, reads.count()-before, v)
		}
		if v := list(i); !shows(v) || reads.count() != before+1 {
			t.Fatalf("listed again after %s, read rows %d times: %+v", what, reads.count()-before, v)
		}
	}

	first := list(0)
	if reads.count() != 1 || first.SandboxStatus != sandbox.StatusRunning || first.TaskStatus != conversation.TaskWorking || first.Title != "title 0" {
		t.Fatalf("listed (rows read %d times): %+v", reads.count(), first)
	}
	if again := list(0); reads.count() != 1 || string(again.SandboxKeySealed) != "\x01\x02\x00" || again.Tags["n"] != "0" {
		t.Fatalf("listed again (rows read %d times): %+v", reads.count(), again)
	}

	changed("an agent step", func() error {
		_, err := s.RecordEvents(ctx, "c0", nil, conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: t0.Add(time.Minute)})
		return err
	}, 0, func(v conversation.View) bool {
		return v.ExecutionStatus == "running" && v.UpdatedAt.Equal(t0.Add(time.Minute))
	})
	changed("a rename", func() error {
		title := "renamed"
		return s.PatchConversation(ctx, "u1", "c1", conversation.Patch{Title: &title}, t0.Add(time.Minute))
	}, 1, func(v conversation.View) bool { return v.Title == "renamed" })
	changed("a sandbox's pause", func() error {
		sb, err := s.GetSandbox(ctx, "u1", "sb0")
		if err != nil {
			return err
		}
		sb.Status = sandbox.StatusPaused
		return s.UpdateSandbox(ctx, sb, sandbox.StatusRunning)
	}, 0, func(v conversation.View) bool { return v.SandboxStatus == sandbox.StatusPaused })
	changed("a sandbox's new session key", func() error {
		_, err := s.w.ExecContext(ctx, `UPDATE sandboxes SET session_key_sealed = x'0707' WHERE id = 'sb1'`)
		return err
	}, 1, func(v conversation.View) bool { return string(v.SandboxKeySealed) == "\x07\x07" })
	changed("a sandbox's deletion", func() error { return s.DeleteSandbox(ctx, "sb1") },
		1, func(v conversation.View) bool { return v.SandboxStatus == sandbox.StatusMissing })
	changed("a sandbox's creation", func() error {
		return s.CreateSandbox(ctx, sandbox.Sandbox{ID: "sb2", OwnerID: "u1", SpecID: "spec", Backend: "process", Status: sandbox.StatusStarting,
			CreatedAt: t0, UpdatedAt: t0}, 0)
	}, 2, func(v conversation.View) bool { return v.SandboxStatus == sandbox.StatusStarting })
	changed("a start task's end", func() error {
		return s.UpdateStartTask(ctx, conversation.StartTask{ID: "t2", OwnerID: "u1", ConversationID: "c2", Status: conversation.TaskError,
			Detail: "no sandbox", CreatedAt: t0.Add(2 * time.Second), UpdatedAt: t0.Add(time.Minute)})
	}, 2, func(v conversation.View) bool {
		return v.TaskStatus == conversation.TaskError && v.TaskDetail == "no sandbox"
	})
	changed("a newer start task", func() error {
		_, err := s.w.ExecContext(ctx, `INSERT INTO start_tasks (id, owner_id, conversation_id, status, detail, sandbox_id, agent_server_url, created_at, updated_at)
			VALUES ('t2b', 'u1', 'c2', 'READY', '', 'sb2', '', ?, ?)`, nanos(t0.Add(time.Hour)), nanos(t0.Add(time.Hour)))
		return err
	}, 2, func(v conversation.View) bool { return v.TaskStatus == conversation.TaskReady && v.TaskDetail == "" })
	changed("the newer start task's deletion", func() error {
		_, err := s.w.ExecContext(ctx, `DELETE FROM start_tasks WHERE id = 't2b'`)
		return err
	}, 2, func(v conversation.View) bool { return v.TaskStatus == conversation.TaskError })
	if err := s.DeleteConversation(ctx, "u1", "c1"); err != nil {
		t.Fatal(err)
	}
	vs, _, err := s.ListConversations(ctx, "u1", conversation.Filter{}, paging.Query{Limit: 10})
	if err != nil || len(vs) != 2 || vs[0].ID != "c2" || vs[1].ID != "c0" {
		t.Fatalf("after a deletion: %+v, %v", vs, err)
	}
}
