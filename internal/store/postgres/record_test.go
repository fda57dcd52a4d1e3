package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestRecordWaitsForDeletion: a record made as the lease's holder that waits for the
// conversation's row, locked by a deletion, holds nothing the deletion needs next (the lease's
// row, which it deletes after locking the conversation's). The deletion goes through, and
// the record then finds the conversation gone. Were the lease's row locked first, the two
// would deadlock, and PostgreSQL would abort one of them.
func TestRecordWaitsForDeletion(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Database(t)
	s := open(t, url)
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := conversation.Conversation{ID: "conv", OwnerID: "owner", Version: conversation.V1, CreatedAt: at, UpdatedAt: at}
	if err := s.CreateConversation(ctx, c, conversation.StartTask{}, nil, conversation.Claim{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimConversation(ctx, c.ID, "replica-a", "node-a", time.Minute); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}

	// The deletion, by hand so that the record can come between its lock and its deletes:
	// the conversation's row first, then the lease's, as DeleteConversation takes them.
	del, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Close(ctx)
	tx, err := del.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, c.ID); err != nil {
		t.Fatal(err)
	}

	recorded := make(chan error, 1)
	go func() {
		ev, err := event.NewUserMessage("ev-1", at, "hello", nil)
		if err == nil {
			_, err = s.RecordEvents(ctx, c.ID, []event.Event{ev}, conversation.StateUpdate{Holder: "replica-a", UpdatedAt: at})
		}
		recorded <- err
	}()
	// Until the record waits for a lock (a minute at most): its database's only other session.
	for deadline := time.Now().Add(time.Minute); ; {
		var waiting int
		if err := del.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-recorded:
			t.Fatalf("the record did not wait for the deletion's lock: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the record never waited for the conversation's row")
		}
		time.Sleep(time.Millisecond)
	}
	for _, q := range []string{
		`DELETE FROM conversation_leases WHERE conversation_id = $1`,
		`DELETE FROM events WHERE conversation_id = $1`,
		`DELETE FROM start_tasks WHERE conversation_id = $1`,
		`DELETE FROM conversations WHERE id = $1`,
	} {
		if _, err := tx.Exec(ctx, q, c.ID); err != nil {
			t.Fatalf("the deletion's %q: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the deletion's commit: %v", err)
	}
	if err := <-recorded; !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("the record after the deletion: %v, want %v", err, conversation.ErrNotFound)
	}
}
