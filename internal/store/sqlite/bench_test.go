package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
