package store_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
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

// TestCopyToPostgresMicroseconds: PostgreSQL keeps times to the microsecond, so a copy from
// SQLite there drops the nanoseconds below (as documented), and keeps the rest.
func TestCopyToPostgresMicroseconds(t *testing.T) {
	ctx := t.Context()
	src, dst := openSQLite(t), openPostgres(t)
	u := auth.User{ID: "u1", Name: "one", CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)}
	if err := src.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, dst.(store.Restorer), src.(store.Dumper)); err != nil {
		t.Fatal(err)
	}
	got, err := dst.GetUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := u.CreatedAt.Truncate(time.Microsecond); !got.CreatedAt.Equal(want) {
		t.Errorf("created at %v after the copy, want %v", got.CreatedAt, want)
	}
}

// TestCopyToPostgresRefusesText: text that SQLite keeps and PostgreSQL's text refuses (a NUL
// character) fails the copy with an error that names the row and the column, and leaves the
// target empty.
func TestCopyToPostgresRefusesText(t *testing.T) {
	ctx := t.Context()
	src, dst := openSQLite(t), openPostgres(t)
	if err := src.CreateUser(ctx, auth.User{ID: "u1", Name: "nul \x00 name", CreatedAt: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	_, err := store.Copy(ctx, dst.(store.Restorer), src.(store.Dumper))
	if err == nil || !strings.Contains(err.Error(), "users (id=u1): column name") || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("copy of a name with a NUL: %v", err)
	}
	users, _, err := dst.ListUsers(ctx, paging.Query{})
	if err != nil || len(users) != 0 {
		t.Fatalf("the target after a failed copy: %v, %v", users, err)
	}
}
