package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew: the database was migrated by a newer agentd than this one. Running an older
// binary on it could corrupt data it does not understand, so Open refuses.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// migrationFiles holds the schema history: migrations/NNNN_name.sql, applied in order of NNNN.
// A released migration is never edited; a change is a new file. The history is this store's
// own: it starts from the SQLite store's schema as it stood when this store was written.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the key of the advisory lock that migrations hold: "agentd" in ASCII.
// Every agentd replica uses it, so that one migrates while the others wait.
const migrationLock int64 = 0x6167656e7464

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations and checks that they are numbered 1, 2, 3, ...
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	// ReadDir sorts by name and the names are zero-padded, so ms is in version order.
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate brings the schema up to date in one transaction that first takes the migration
// lock. Replicas starting together queue on the lock: the first applies what is missing, and
// the others, once it committed, find nothing left to apply. PostgreSQL's DDL is
// transactional, so a migration that fails leaves the schema as it was.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if current > len(ms) {
			return fmt.Errorf("%w: database is at version %d, this binary knows up to %d", ErrSchemaTooNew, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.version); err != nil {
				return fmt.Errorf("record version %d: %w", m.version, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
