package postgres

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// versions reads the versions recorded in schema_migrations of the database at url.
func versions(t *testing.T, url string) []int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestMigrateConcurrently: replicas that open one new database at once all succeed, and the
// schema is migrated once: each version is recorded once, and every replica sees it.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.Database(t)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 6
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), url, Options{MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: open: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.version)
	}
	if got := versions(t, url); !slices.Equal(got, want) {
		t.Fatalf("versions recorded: %v, want %v", got, want)
	}
	for i, s := range stores {
		if _, err := s.Counts(t.Context()); err != nil {
			t.Fatalf("replica %d reads the schema: %v", i, err)
		}
	}

	// A later start finds nothing to do.
	s, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatalf("open a migrated database: %v", err)
	}
	s.Close()
	if got := versions(t, url); !slices.Equal(got, want) {
		t.Fatalf("versions after another open: %v, want %v", got, want)
	}
}

// TestSchemaTooNew: a binary refuses a database migrated by a newer one.
func TestSchemaTooNew(t *testing.T) {
	url := pgtest.Database(t)
	s, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version) VALUES (9999)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(t.Context(), url, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// TestOpenErrors: a bad URL or a server that does not answer fail Open, and the error does not
// show the password.
func TestOpenErrors(t *testing.T) {
	for _, url := range []string{
		"postgres://agentd:s3cret-pw@127.0.0.1:notaport/agentd",
		"postgres://agentd:s3cret-pw@127.0.0.1:1/agentd?connect_timeout=5",
	} {
		s, err := Open(t.Context(), url, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("open %s: no error", url)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Fatalf("open error shows the password: %v", err)
		}
	}
}
