package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestReadCommitted: the store's statements and transactions run at READ COMMITTED even on a
// database whose default is another level, since its locking counts on it.
func TestReadCommitted(t *testing.T) {
	url := pgtest.Database(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = serializable', current_database());
	END $$`)
	conn.Close(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var outside, inside string
	if err := s.pool.QueryRow(t.Context(), `SHOW transaction_isolation`).Scan(&outside); err != nil {
		t.Fatal(err)
	}
	err = s.write(t.Context(), func(tx pgx.Tx) error {
		return tx.QueryRow(t.Context(), `SHOW transaction_isolation`).Scan(&inside)
	})
	if err != nil {
		t.Fatal(err)
	}
	if outside != "read committed" || inside != "read committed" {
		t.Fatalf("isolation %q outside a transaction and %q inside, want read committed", outside, inside)
	}
}
