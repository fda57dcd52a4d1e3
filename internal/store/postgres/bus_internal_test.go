package postgres

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestBusForgetsConversationsLeft: the conversations subscribed to once and left (ids that
// are nobody's, as a page may ask for, or finished conversations opened once) do not stay
// in the bus's memory, however many there were; a conversation still followed keeps its
// entry through the sweeps and gets its events.
func TestBusForgetsConversationsLeft(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Database(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBus(s, "", nil)
	defer b.Close()
	// Listening first: a bus that begins to listen reads every conversation it follows again
	// and forgets those without subscribers, which would do the sweep's work here.
	for deadline := time.Now().Add(time.Minute); b.Check(ctx) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bus does not listen a minute after it started")
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.CreateUser(ctx, auth.User{ID: "u1", Name: "alice", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	c := conversation.Conversation{ID: "live", OwnerID: "u1", Version: conversation.V1, Title: "live",
		Tags: map[string]string{}, PRNumbers: []int{}, CreatedAt: now, UpdatedAt: now}
	task := conversation.StartTask{ID: "t-live", OwnerID: "u1", ConversationID: "live", Status: conversation.TaskReady,
		Request: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConversation(ctx, c, task, nil, conversation.Claim{}); err != nil {
		t.Fatal(err)
	}
	live, err := b.Subscribe(ctx, "live", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	const left = 5 * minSweep
	for i := range left {
		sub, err := b.Subscribe(ctx, fmt.Sprintf("nobodys-%d", i), 1)
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
	}
	b.mu.Lock()
	n := len(b.convs)
	_, kept := b.convs["live"]
	b.mu.Unlock()
	if n > 2*minSweep {
		t.Fatalf("the bus keeps %d conversations after %d were subscribed to and left and one is followed, want at most %d", n, left, 2*minSweep)
	}
	if !kept {
		t.Fatal("a sweep dropped the conversation still followed")
	}

	ev := []event.Event{{ID: "live-1", ConversationID: "live", Kind: event.KindMessage, Source: event.SourceUser,
		Timestamp: now, Body: json.RawMessage(`{"id": "live-1"}`)}}
	if err := b.Record("live", func() error { return s.AppendEvents(ctx, ev) }, ev); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-live.C:
		if e.ID != "live-1" {
			t.Fatalf("the followed conversation's subscriber got %s, want live-1", e.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the followed conversation's subscriber got nothing within a minute of its event")
	}
}
