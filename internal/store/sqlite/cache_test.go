package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"
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
