package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
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

// TestReleaseMemoryShrinksEveryConnection: ReleaseMemory empties the page cache of each
// connection open, once: the readers the pool holds and the writer.
func TestReleaseMemoryShrinksEveryConnection(t *testing.T) {
	ctx := t.Context()
	log := &pragmaLog{n: map[string]int{}}
	s, _ := storeWithConversations(t, Options{Observer: log}, "c1", "c2")
	// Three readers open at once.
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
		c.Close()
	}
	readers := s.r.DB.Stats().OpenConnections
	log.mu.Lock()
	clear(log.n)
	log.mu.Unlock()
	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if readers < 3 || log.n[PoolRead] != readers || log.n[PoolWrite] != 1 {
		t.Fatalf("shrank %d readers of %d open and %d writers, want each once", log.n[PoolRead], readers, log.n[PoolWrite])
	}
}
