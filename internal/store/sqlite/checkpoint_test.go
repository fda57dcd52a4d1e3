package sqlite

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// TestCheckpointsRunBesideTheWriter: the writer's commits checkpoint nothing themselves, and
// the checkpointer copies the WAL into the database file while the store is open.
func TestCheckpointsRunBesideTheWriter(t *testing.T) {
	ctx := t.Context()
	s, now := storeWithConversations(t, Options{}, "c1")
	var auto int
	if err := s.w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("the writer's wal_autocheckpoint is %d (%v), want 0", auto, err)
	}
	var seq int
	var name, path string
	if err := s.w.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &path); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before, runs := size(), s.ckpt.runs.Load()
	// Enough commits for a few checkpoints, each adding a page or more of events.
	for i := range 3 * checkpointEvery {
		ev := runningEvent(t, fmt.Sprintf("e%d", i), now)
		ev.LLMText = string(make([]byte, 2048))
		if _, err := s.RecordEvents(ctx, "c1", []event.Event{ev}, conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for s.ckpt.runs.Load() < runs+2 || size() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("after %d commits: %d checkpoints, database file %d bytes (was %d)", 3*checkpointEvery, s.ckpt.runs.Load()-runs, size(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
