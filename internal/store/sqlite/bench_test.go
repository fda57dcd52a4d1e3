package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// BenchmarkListConversations reads the first page of 100 of 1,000 conversations, each with a
// start task and half of them with a sandbox, as the conversation list of the web UI does.
func BenchmarkListConversations(b *testing.B) {
	ctx := b.Context()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
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
			if err := s.CreateSandbox(ctx, sb); err != nil {
				b.Fatal(err)
			}
		}
		task := conversation.StartTask{ID: "task-" + id, Status: conversation.TaskReady, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateConversation(ctx, c, task, []event.Event(nil)); err != nil {
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
