package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// TestWritesRunPrepared: an append's statements are prepared once, on the writer's only
// connection, and every later append runs them from there; the first append, which finds
// nothing prepared while its transaction holds that connection, runs unprepared instead of
// waiting for the connection it holds.
func TestWritesRunPrepared(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_700_000_000, 0).UTC()
	if err := s.CreateUser(ctx, auth.User{ID: "u1", Name: "alice", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	c := conversation.Conversation{ID: "c1", OwnerID: "u1", Version: conversation.V1, Title: "t", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConversation(ctx, c, conversation.StartTask{}, nil); err != nil {
		t.Fatal(err)
	}
	appendOne := func(i int) {
		t.Helper()
		ev, err := event.NewStateUpdate(fmt.Sprintf("e%d", i), now, event.StateExecutionStatus, "running")
		if err != nil {
			t.Fatal(err)
		}
		u := conversation.StateUpdate{ExecutionStatus: "running", Metrics: json.RawMessage(`{}`), UpdatedAt: now.Add(time.Duration(i))}
		if err := s.RecordEvents(ctx, "c1", []event.Event{ev}, u); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	appendOne(0)
	appendOne(1)
	held := map[string]*sql.Stmt{}
	s.w.mu.Lock()
	for q, st := range s.w.prepared {
		held[q] = st
	}
	s.w.mu.Unlock()
	if len(held) < 2 {
		t.Fatalf("the writer keeps %d statements prepared after two appends, want the INSERT and the UPDATE", len(held))
	}
	for i := 2; i < 10; i++ {
		appendOne(i)
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if len(s.w.prepared) != len(held) || len(s.w.noted) != 0 {
		t.Fatalf("the writer prepared %d statements, %d noted, after more appends of the same kind; it had %d", len(s.w.prepared), len(s.w.noted), len(held))
	}
	for q, st := range held {
		if s.w.prepared[q] != st {
			t.Fatalf("statement %q was prepared again", q)
		}
	}
	evs, err := s.ConversationEvents(ctx, "c1", 0)
	if err != nil || len(evs) != 10 {
		t.Fatalf("the log holds %d events (%v), want 10", len(evs), err)
	}
}
