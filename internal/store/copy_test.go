package store_test

import (
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgres(t *testing.T) store.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), pgtest.Database(t), postgres.Options{})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCopy copies between every pair of stores: SQLite to PostgreSQL (agentd migrate), and
// back, and each to another of its kind.
func TestCopy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst func(t *testing.T) store.Store
	}{
		{"SQLiteToPostgres", openSQLite, openPostgres},
		{"PostgresToSQLite", openPostgres, openSQLite},
		{"SQLiteToSQLite", openSQLite, openSQLite},
		{"PostgresToPostgres", openPostgres, openPostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.RunCopy(t, storetest.CopyFactory{Source: tc.src, Target: tc.dst})
		})
	}
}
