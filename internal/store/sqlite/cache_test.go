package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
)

// TestCacheShared checks that the store's page cache budget is shared out among all its
// connections, the writer and every reader, instead of SQLite's default for each.
func TestCacheShared(t *testing.T) {
	readers := max(4, runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name   string
		budget int64
		want   int64 // KiB per connection
	}{
		{name: "default", want: DefaultCacheBytes >> 10 / int64(readers+1)},
		{name: "given", budget: 10 << 20, want: 10 << 10 / int64(readers+1)},
		{name: "too small to share", budget: 1 << 10, want: minCacheKiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenWith(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), Options{CacheBytes: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := cacheSize(t, s.w); got != -tc.want {
				t.Errorf("writer: cache_size %d, want %d", got, -tc.want)
			}
			// Every reader at once, so that each is a connection of its own.
			var conns []*sql.Conn
			for range readers {
				c, err := s.r.Conn(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				conns = append(conns, c)
			}
			for i, c := range conns {
				if got := cacheSize(t, c); got != -tc.want {
					t.Errorf("reader %d: cache_size %d, want %d", i, got, -tc.want)
				}
			}
		})
	}
}

func cacheSize(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRowContext(t.Context(), "PRAGMA cache_size").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReleaseMemoryClosesIdleConnections: ReleaseMemory closes every idle connection (the
// readers, the writer, the data version's), leaves one in use alone without waiting for it,
// and the pools open connections again as they are needed, the file still in WAL mode.
func TestReleaseMemoryClosesIdleConnections(t *testing.T) {
	ctx := t.Context()
	s, now := storeWithConversations(t, Options{}, "c1", "c2")
	// Three readers open at once; one stays in use.
	var conns []*sql.Conn
	for range 3 {
		c, err := s.r.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		var n int
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM conversations").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	busy := conns[0]
	for _, c := range conns[1:] {
		c.Close()
	}
	if st := s.r.DB.Stats(); st.OpenConnections < 3 || st.Idle < 2 {
		t.Fatalf("before: %d readers open, %d idle", st.OpenConnections, st.Idle)
	}
	version, err := s.changes.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.w.DB.Stats(); st.OpenConnections != 1 || st.Idle != 1 {
		t.Fatalf("before: the writer has %d connections open, %d idle", st.OpenConnections, st.Idle)
	}
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	if st := s.r.DB.Stats(); st.OpenConnections != 1 || st.Idle != 0 {
		t.Fatalf("after: %d readers open, %d idle; want the busy one alone", st.OpenConnections, st.Idle)
	}
	for name, db := range map[string]*sql.DB{"writer": s.w.DB, "data version": s.changes.db} {
		if n := db.Stats().OpenConnections; n != 0 {
			t.Errorf("after: the %s has %d connections open", name, n)
		}
	}
	// The busy reader still works, and so do new ones, which the pool keeps again.
	var n int
	if err := busy.QueryRowContext(ctx, "SELECT count(*) FROM conversations").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the busy reader: %d conversations, %v", n, err)
	}
	busy.Close()
	if _, _, err := s.ListConversations(ctx, "u1", conversation.Filter{}, paging.Query{}); err != nil {
		t.Fatal(err)
	}
	if st := s.r.DB.Stats(); st.Idle == 0 {
		t.Fatal("the readers are not kept open again after ReleaseMemory")
	}
	// The writer opens again, on a file still in WAL mode, and the data version's new
	// connection tells its versions from the earlier ones.
	c := conversation.Conversation{ID: "c3", OwnerID: "u1", Version: conversation.V1, Title: "c3", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConversation(ctx, c, conversation.StartTask{}, nil, conversation.Claim{}); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.w.DB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q after ReleaseMemory (%v), want wal", mode, err)
	}
	if st := s.w.DB.Stats(); st.OpenConnections != 1 || st.Idle != 1 {
		t.Fatalf("the writer is not kept open again: %d connections open, %d idle", st.OpenConnections, st.Idle)
	}
	again, err := s.changes.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again == version {
		t.Fatalf("data version %x after ReleaseMemory and a commit, as before", again)
	}
}

// TestReleaseMemoryLeavesABusyWriter: a transaction in progress keeps the writer's connection
// through ReleaseMemory, which does not wait for it, and commits; the pool keeps it after.
func TestReleaseMemoryLeavesABusyWriter(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{}, "c1")
	tx, err := s.w.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE conversations SET title = 'renamed' WHERE id = 'c1'"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if st := s.w.DB.Stats(); st.OpenConnections != 1 || st.Idle != 1 {
		t.Fatalf("the writer after its transaction: %d connections open, %d idle", st.OpenConnections, st.Idle)
	}
	got, err := s.GetConversation(ctx, "u1", "c1")
	if err != nil || got.Title != "renamed" {
		t.Fatalf("after the commit: title %q, %v", got.Title, err)
	}
}

// TestReleaseMemoryRemovesTheWAL: with no connection in use, ReleaseMemory closes them all,
// the last close checkpoints the WAL into the database and removes it with its index, and
// what was written is read back after.
func TestReleaseMemoryRemovesTheWAL(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{})
	var file string
	if err := s.r.DB.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(file + suffix); err != nil {
			t.Fatalf("before: %v", err)
		}
	}
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(file + suffix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after: %s: %v, want it removed", file+suffix, err)
		}
	}
	if u, err := s.GetUser(ctx, "u1"); err != nil || u.Name != "alice" {
		t.Fatalf("after: user %+v, %v", u, err)
	}
}
