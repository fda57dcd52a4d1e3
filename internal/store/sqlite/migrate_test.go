package sqlite

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMigrationsAreNumberedFromOne(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].name != "0001_init.sql" {
		t.Fatalf("migrations %v, want 0001_init.sql first", ms)
	}
}

func TestOpenMigratesOnceAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	for range 2 {
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var n, max int
		if err := s.r.QueryRowContext(t.Context(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		ms, _ := loadMigrations()
		if n != len(ms) || max != len(ms) {
			t.Fatalf("schema_migrations has %d rows up to %d, want %d", n, max, len(ms))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := s.w.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err = Open(t.Context(), path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open a newer database: got %v, want %v", err, ErrSchemaTooNew)
	}
}

func TestOpenPathWithURISyntax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?name#with%chars&_txlock=x.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the path given: %v", err)
	}
}

func TestPragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.w.DB, "journal_mode", "wal"},
		{s.w.DB, "synchronous", "1"}, // NORMAL
		{s.w.DB, "foreign_keys", "1"},
		{s.w.DB, "busy_timeout", "10000"},
		{s.r.DB, "foreign_keys", "1"},
		{s.r.DB, "query_only", "1"},
		{s.r.DB, "busy_timeout", "10000"},
	} {
		var got string
		if err := tc.db.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM users`); err == nil {
		t.Error("the reader pool accepted a write")
	}
}
