package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// busConversation stores a user and a conversation of theirs on s.
func busConversation(t *testing.T, s *postgres.Store, id string) {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.CreateUser(ctx, auth.User{ID: "u-" + id, Name: "user " + id, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	c := conversation.Conversation{ID: id, OwnerID: "u-" + id, Version: conversation.V1, Title: id,
		Tags: map[string]string{}, PRNumbers: []int{}, CreatedAt: now, UpdatedAt: now}
	task := conversation.StartTask{ID: "t-" + id, OwnerID: c.OwnerID, ConversationID: id, Status: conversation.TaskReady,
		Request: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConversation(ctx, c, task, nil, conversation.Claim{}); err != nil {
		t.Fatal(err)
	}
}

func busEvent(conv string, n int) event.Event {
	id := fmt.Sprintf("%s-%03d", conv, n)
	return event.Event{ID: id, ConversationID: conv, Kind: "MessageEvent", Source: event.SourceUser,
		Timestamp: time.Now().UTC().Truncate(time.Microsecond), Body: json.RawMessage(fmt.Sprintf(`{"id": %q}`, id))}
}

// TestBusReconnects: a replica whose listening connection the database closes (a restart, a
// failover, an idle timeout of a proxy) says so in Check, listens again by itself, and its
// streams then get what the other replica appended meanwhile, in order, each once.
func TestBusReconnects(t *testing.T) {
	url := pgtest.Database(t)
	writer, reader := open(t, url), open(t, url)
	wbus, rbus := newBus(t, writer), newBus(t, reader)
	busConversation(t, writer, "conv-r")
	record := func(n int) {
		ev := []event.Event{busEvent("conv-r", n)}
		if err := wbus.Record("conv-r", func() error { return writer.AppendEvents(t.Context(), ev) }, ev); err != nil {
			t.Fatal(err)
		}
	}
	read := func(ctx context.Context, after int64, limit int) ([]event.Event, error) {
		return reader.ConversationEvents(ctx, "conv-r", after)
	}
	record(0)
	feed := event.Follow(t.Context(), rbus, "conv-r", event.FeedOptions{Read: read, Buffer: 100})
	defer feed.Close()
	want := []string{"conv-r-000"}

	// Close the reader's listening connection from the server's side, the way an
	// administrator's pg_terminate_backend or a failover does.
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var killed int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+postgres.EventsChannel+`' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 2 {
		t.Fatalf("closed %d listening connections, want the two replicas'", killed)
	}
	for n := 1; n <= 20; n++ {
		record(n)
		want = append(want, fmt.Sprintf("conv-r-%03d", n))
	}
	var got []string
	deadline := time.After(time.Minute)
	for len(got) < len(want) {
		select {
		case e, ok := <-feed.C:
			if !ok {
				t.Fatalf("the feed ended: %v, after %v", feed.Err(), got)
			}
			got = append(got, e.ID)
		case <-deadline:
			t.Fatalf("after a minute the reader's feed has %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if err := rbus.Check(t.Context()); err != nil {
		t.Fatalf("the reader's bus after it caught up: %v", err)
	}
}

// TestBusTransientTooLarge: a transient event larger than a notification holds still reaches
// the streams of its own replica.
func TestBusTransientTooLarge(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url)
	b := newBus(t, s)
	busConversation(t, s, "conv-t")
	sub, err := b.Subscribe(t.Context(), "conv-t", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	big := event.Event{ID: "big", ConversationID: "conv-t", Kind: event.KindStateUpdate,
		Body: json.RawMessage(fmt.Sprintf(`{"value": %q}`, make([]byte, 9000)))}
	b.Publish(big)
	select {
	case e := <-sub.C:
		if e.ID != "big" {
			t.Fatalf("got %s", e.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the large transient event did not reach this replica's subscriber")
	}
}
