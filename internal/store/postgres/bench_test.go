package postgres_test

import (
	"testing"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/storetest"
)

// BenchmarkStore: each time is this process's (pgx's) and PostgreSQL's together, on the
// loopback server the tests start.
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store { return open(b, pgtest.Database(b)) })
}
