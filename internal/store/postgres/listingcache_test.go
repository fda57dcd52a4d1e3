package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// rowReads counts the queries that read whole rows of each listing, by a column that only
// those read.
type rowReads struct {
	mu sync.Mutex
	n  map[string]int
}

var wholeRows = map[string]string{"conversations": "c.secrets_sealed", "tasks": "agent_server_url, request", "sandboxes": "session_key_hash", "events": "e.body"}

func (r *rowReads) trace(sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for listing, column := range wholeRows {
		if strings.HasPrefix(strings.TrimSpace(sql), "SELECT") && strings.Contains(sql, column) {
			r.n[listing]++
		}
	}
}

// take returns the counts since the last take.
func (r *rowReads) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

// TestListingsReadRowsAgainOnlyOnceChanged: a store lists what another store on the same
// database (another replica) writes, reading whole rows only for those the other changed
// since it last listed them, and only once: its listing cache holds the rest, at the versions
// the database says they are at.
func TestListingsReadRowsAgainOnlyOnceChanged(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Database(t)
	reads := &rowReads{n: map[string]int{}}
	s, err := Open(ctx, url, Options{trace: reads.trace})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var tasks []conversation.StartTask
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Second)
		c := conversation.Conversation{ID: fmt.Sprint("c", i), OwnerID: "u1", Version: conversation.V1, SandboxID: fmt.Sprint("sb", i),
			Title: fmt.Sprint("title ", i), CreatedAt: at, UpdatedAt: at}
		task := conversation.StartTask{ID: fmt.Sprint("t", i), Status: conversation.TaskWorking,
			Request: json.RawMessage(`{"n":1}`), CreatedAt: at, UpdatedAt: at}
		ev := event.Event{ID: fmt.Sprint("e", i), Kind: event.KindMessage, Source: event.SourceUser, Timestamp: at, Body: json.RawMessage(`{"n":1}`)}
		if err := other.CreateConversation(ctx, c, task, []event.Event{ev}, conversation.Claim{}); err != nil {
			t.Fatal(err)
		}
		task.OwnerID, task.ConversationID = "u1", c.ID
		tasks = append(tasks, task)
		sb := sandbox.Sandbox{ID: c.SandboxID, OwnerID: "u1", SpecID: "spec", Backend: "process", Status: sandbox.StatusRunning,
			SessionKeySealed: []byte{byte(i)}, CreatedAt: at, UpdatedAt: at}
		if err := other.CreateSandbox(ctx, sb, 0); err != nil {
			t.Fatal(err)
		}
	}
	page := paging.Query{Limit: 10}
	type listed struct {
		convs  []conversation.View
		tasks  []conversation.StartTask
		sbs    []sandbox.Sandbox
		events []event.Event
	}
	list := func() listed {
		t.Helper()
		var l listed
		var err error
		if l.convs, _, err = s.ListConversations(ctx, "u1", conversation.Filter{}, page); err != nil || len(l.convs) != 3 {
			t.Fatalf("%d conversations, %v", len(l.convs), err)
		}
		if l.tasks, _, err = s.ListStartTasks(ctx, "u1", conversation.TaskFilter{}, conversation.SortCreatedAtDesc, page); err != nil || len(l.tasks) != 3 {
			t.Fatalf("%d start tasks, %v", len(l.tasks), err)
		}
		if l.sbs, _, err = s.ListSandboxes(ctx, "u1", page); err != nil || len(l.sbs) != 3 {
			t.Fatalf("%d sandboxes, %v", len(l.sbs), err)
		}
		if l.events, _, err = s.SearchEvents(ctx, "u1", event.Filter{}, false, page); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// read lists everything twice and checks which listings read whole rows the first time
	// (once each), that none did the second, and that both lists agree.
	read := func(what string, want ...string) listed {
		t.Helper()
		first := list()
		got := reads.take()
		wantN := map[string]int{}
		for _, w := range want {
			wantN[w] = 1
		}
		if fmt.Sprint(got) != fmt.Sprint(wantN) {
			t.Fatalf("%s: listings read whole rows %v times, want %v", what, got, wantN)
		}
		again := list()
		if got := reads.take(); len(got) != 0 {
			t.Fatalf("%s: listed again, read whole rows %v times", what, got)
		}
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("%s: listed again:\n%+v\nfirst:\n%+v", what, again, first)
		}
		return first
	}

	l := read("the first listing", "conversations", "tasks", "sandboxes", "events")
	if l.convs[0].SandboxStatus != sandbox.StatusRunning || l.convs[0].TaskStatus != conversation.TaskWorking || len(l.events) != 3 {
		t.Fatalf("first listed: %+v", l)
	}
	if _, err := other.RecordEvents(ctx, "c1", []event.Event{{ID: "e3", Kind: event.KindMessage, Source: event.SourceAgent, Timestamp: t0, Body: json.RawMessage(`{}`)}},
		conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if l := read("an agent step through another store", "conversations", "events"); l.convs[1].ExecutionStatus != "running" || len(l.events) != 4 {
		t.Fatalf("after an agent step: %+v", l)
	}
	paused := sandbox.Sandbox{ID: "sb2", OwnerID: "u1", Status: sandbox.StatusPaused, UpdatedAt: t0.Add(time.Minute)}
	if err := other.UpdateSandbox(ctx, paused, sandbox.StatusRunning); err != nil {
		t.Fatal(err)
	}
	if l := read("a sandbox's pause through another store", "conversations", "sandboxes"); l.convs[0].SandboxStatus != sandbox.StatusPaused || l.sbs[0].Status != sandbox.StatusPaused {
		t.Fatalf("after a sandbox's pause: %+v", l)
	}
	ready := tasks[0]
	ready.Status, ready.UpdatedAt = conversation.TaskReady, t0.Add(time.Minute)
	if err := other.UpdateStartTask(ctx, ready); err != nil {
		t.Fatal(err)
	}
	if l := read("a start task's end through another store", "conversations", "tasks"); l.convs[2].TaskStatus != conversation.TaskReady || l.tasks[2].Status != conversation.TaskReady {
		t.Fatalf("after a start task's end: %+v", l)
	}
	if err := other.DeleteConversation(ctx, "u1", "c0"); err != nil {
		t.Fatal(err)
	}
	vs, _, err := s.ListConversations(ctx, "u1", conversation.Filter{}, page)
	if err != nil || len(vs) != 2 || vs[0].ID != "c2" || vs[1].ID != "c1" {
		t.Fatalf("after a deletion through another store: %+v, %v", vs, err)
	}
	if got := reads.take(); len(got) != 0 {
		t.Fatalf("after a deletion, the listing read whole rows %v times", got)
	}
}
