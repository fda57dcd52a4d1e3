package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

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

// pragmaLog counts the PRAGMA statements of each pool.
type pragmaLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *pragmaLog) ObserveQuery(pool, statement string, _ time.Duration, failed bool) {
	if statement == "pragma" && !failed {
		l.mu.Lock()
		l.n[pool]++
		l.mu.Unlock()
	}
}

// TestReleaseMemoryClosesIdleReaders: ReleaseMemory closes the readers that are idle, leaves
// one in use alone, and empties the writer's page cache; the readers open again as queries
// need them.
func TestReleaseMemoryClosesIdleReaders(t *testing.T) {
	ctx := t.Context()
	log := &pragmaLog{n: map[string]int{}}
	s, _ := storeWithConversations(t, Options{Observer: log}, "c1", "c2")
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
	log.mu.Lock()
	clear(log.n)
	log.mu.Unlock()
	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.r.DB.Stats(); st.OpenConnections != 1 || st.Idle != 0 {
		t.Fatalf("after: %d readers open, %d idle; want the busy one alone", st.OpenConnections, st.Idle)
	}
	log.mu.Lock()
	shrunk := log.n[PoolWrite]
	log.mu.Unlock()
	if shrunk != 1 {
		t.Fatalf("the writer's page cache was emptied %d times, want once", shrunk)
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
}
