package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// Benchmark runs the store's benchmarks, each on a new, empty store that open returns (and
// closes when b ends): the listings, read again as clients poll them, an append (plain, and
// as the agent loop makes it, the holder of the conversation's lease) and a sandbox's status
// change. Each store runs them (go test -bench Store), so that
// their figures stand side by side.
func Benchmark(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bm := range []struct {
		name string
		fn   func(b *testing.B, s store.Store)
	}{
		{"ListConversations", benchListConversations},
		{"SearchEvents", benchSearchEvents},
		{"ListStartTasks", benchListStartTasks},
		{"ListSandboxes", benchListSandboxes},
		{"RecordEvents", benchRecordEvents},
		{"RecordEventsHeld", benchRecordEventsHeld},
		{"UpdateSandbox", benchUpdateSandbox},
	} {
		b.Run(bm.name, func(b *testing.B) { bm.fn(b, open(b)) })
	}
}

// benchListConversations reads the first page of 100 of 1,000 conversations, each with a
// start task and half of them with a sandbox, as the conversation list of the web UI does:
// after the first read, from the listing cache but for the page's versions.
func benchListConversations(b *testing.B, s store.Store) {
	ctx := b.Context()
	const owner = "owner"
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("conv-%04d", i)
		c := conversation.Conversation{
			ID: id, OwnerID: owner, Version: conversation.V1, Title: "conversation " + id,
			PRNumbers: []int{i}, CreatedAt: at, UpdatedAt: at,
		}
		if i%2 == 0 {
			c.SandboxID = "sb-" + id
			sb := sandbox.Sandbox{ID: c.SandboxID, OwnerID: owner, Status: sandbox.StatusRunning, CreatedAt: at, UpdatedAt: at}
			if err := s.CreateSandbox(ctx, sb, 0); err != nil {
				b.Fatal(err)
			}
		}
		task := conversation.StartTask{ID: "task-" + id, Status: conversation.TaskReady, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateConversation(ctx, c, task, []event.Event(nil), conversation.Claim{}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		vs, next, err := s.ListConversations(ctx, owner, conversation.Filter{}, paging.Query{Limit: 100})
		if err != nil || len(vs) != 100 || next == "" {
			b.Fatalf("list: %d items, next %q, err %v", len(vs), next, err)
		}
	}
}

// benchSearchEvents reads the first page of 100 of a conversation's 1,000 events, each of
// about 700 bytes, as a client that polls the conversation does: after the first read, from
// the event cache but for the page's sequence numbers.
func benchSearchEvents(b *testing.B, s store.Store) {
	ctx := b.Context()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := conversation.Conversation{ID: "conv", OwnerID: "owner", Version: conversation.V1, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateConversation(ctx, c, conversation.StartTask{ID: "task", Status: conversation.TaskReady, CreatedAt: t0, UpdatedAt: t0}, nil, conversation.Claim{}); err != nil {
		b.Fatal(err)
	}
	evs := make([]event.Event, 1000)
	for i := range evs {
		id := fmt.Sprintf("event-%04d", i)
		evs[i] = event.Event{ID: id, ConversationID: "conv", Kind: event.KindMessage, Source: "agent", Timestamp: t0.Add(time.Duration(i)),
			Body: fmt.Appendf(nil, `{"id":%q,"kind":"MessageEvent","source":"agent","text":%q}`, id, strings.Repeat("word ", 130))}
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		page, next, err := s.SearchEvents(ctx, "owner", event.Filter{ConversationID: "conv"}, false, paging.Query{Limit: 100})
		if err != nil || len(page) != 100 || next == "" {
			b.Fatalf("search: %d events, next %q, err %v", len(page), next, err)
		}
	}
}

// benchListStartTasks reads the first page of 100 of 1,000 start tasks, newest first, each
// with a request of about 900 bytes: after the first read, from the listing cache but for the
// page's versions.
func benchListStartTasks(b *testing.B, s store.Store) {
	ctx := b.Context()
	createBenchConversations(b, s, 1000)
	for b.Loop() {
		ts, next, err := s.ListStartTasks(ctx, "owner", conversation.TaskFilter{}, conversation.SortCreatedAtDesc, paging.Query{Limit: 100})
		if err != nil || len(ts) != 100 || next == "" {
			b.Fatalf("list: %d tasks, next %q, err %v", len(ts), next, err)
		}
	}
}

// benchListSandboxes reads the first page of 100 of 1,000 sandboxes, newest first: after the
// first read, from the listing cache but for the page's versions.
func benchListSandboxes(b *testing.B, s store.Store) {
	ctx := b.Context()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * time.Minute)
		sb := sandbox.Sandbox{ID: fmt.Sprintf("sb-%04d", i), OwnerID: "owner", SpecID: "default", Backend: "process",
			Status: sandbox.StatusMissing, Detail: "the sandbox's processes are gone", CreatedAt: at, UpdatedAt: at}
		if err := s.CreateSandbox(ctx, sb, 0); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		sbs, next, err := s.ListSandboxes(ctx, "owner", paging.Query{Limit: 100})
		if err != nil || len(sbs) != 100 || next == "" {
			b.Fatalf("list: %d sandboxes, next %q, err %v", len(sbs), next, err)
		}
	}
}

// benchRecordEvents records what an agent step does: one event of about 700 bytes with the
// conversation's new metrics and update time, among 1,000 stored conversations.
func benchRecordEvents(b *testing.B, s store.Store) { benchRecord(b, s, "") }

// benchRecordEventsHeld records the same as the holder of the conversation's lease, with
// the revision of the owner's secrets the event was masked for, as the agent loop's appends
// are made (StateUpdate.Holder and IfSecretsRevision, which the append checks under the
// conversation's row lock).
func benchRecordEventsHeld(b *testing.B, s store.Store) { benchRecord(b, s, "replica") }

// benchRecord is benchRecordEvents, as holder when it is set.
func benchRecord(b *testing.B, s store.Store, holder string) {
	ctx := b.Context()
	t0 := createBenchConversations(b, s, 1000)
	if holder != "" {
		if ok, err := s.ClaimConversation(ctx, "conv-0500", holder, "node", time.Hour); err != nil || !ok {
			b.Fatalf("claim: %v, %v", ok, err)
		}
	}
	text := strings.Repeat("word ", 130)
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("event-%d", i)
		at := t0.Add(time.Duration(i) * time.Second)
		ev := event.Event{ID: id, Kind: event.KindMessage, Source: "agent", Timestamp: at,
			Body: fmt.Appendf(nil, `{"id":%q,"kind":"MessageEvent","source":"agent","text":%q}`, id, text)}
		u := conversation.StateUpdate{Holder: holder, ExecutionStatus: "running", Metrics: fmt.Appendf(nil, `{"accumulated_cost":%d}`, i), UpdatedAt: at}
		if holder != "" {
			u.IfSecretsRevision = new(int64)
		}
		if _, err := s.RecordEvents(ctx, "conv-0500", []event.Event{ev}, u); err != nil {
			b.Fatal(err)
		}
	}
}

// benchUpdateSandbox changes a sandbox's status, as a pause or a resume records it: one
// statement, outside any transaction.
func benchUpdateSandbox(b *testing.B, s store.Store) {
	ctx := b.Context()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sb := sandbox.Sandbox{ID: "sb", OwnerID: "owner", SpecID: "default", Backend: "process", Status: sandbox.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateSandbox(ctx, sb, 0); err != nil {
		b.Fatal(err)
	}
	next := map[sandbox.Status]sandbox.Status{sandbox.StatusRunning: sandbox.StatusPaused, sandbox.StatusPaused: sandbox.StatusRunning}
	i := 0
	for b.Loop() {
		i++
		from := sb.Status
		sb.Status, sb.UpdatedAt = next[from], t0.Add(time.Duration(i)*time.Second)
		if err := s.UpdateSandbox(ctx, sb, from); err != nil {
			b.Fatal(err)
		}
	}
}

// createBenchConversations stores n conversations of the user "owner", conv-0000 to conv-<n-1>,
// a minute apart from the time it returns, each with a start task whose request is of about
// 900 bytes.
func createBenchConversations(b *testing.B, s store.Store, n int) time.Time {
	b.Helper()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("conv-%04d", i)
		c := conversation.Conversation{ID: id, OwnerID: "owner", Version: conversation.V1, CreatedAt: at, UpdatedAt: at}
		task := conversation.StartTask{ID: "task-" + id, OwnerID: "owner", ConversationID: id, Status: conversation.TaskReady,
			Request: fmt.Appendf(nil, `{"initial_message":{"content":[{"type":"text","text":%q}]}}`, strings.Repeat("word ", 170)), CreatedAt: at, UpdatedAt: at}
		if err := s.CreateConversation(b.Context(), c, task, nil, conversation.Claim{}); err != nil {
			b.Fatal(err)
		}
	}
	return t0
}
