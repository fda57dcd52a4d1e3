package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// ErrSchemaTooNew: the database was migrated by a newer agentd than this one. Running an older
// binary on it could corrupt data it does not understand, so Open refuses.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// migrationFiles holds the schema history: migrations/NNNN_name.sql, applied in order of NNNN.
// A released migration is never edited; a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

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

// migrate brings the schema up to date, one transaction per migration. Each transaction is
// IMMEDIATE and checks again whether its migration is applied, so two processes opening the
// same new file at once apply every migration exactly once.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := apply(ctx, db, m, len(ms)); err != nil {
			return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

// apply applies m unless it is applied already; either way it first refuses a schema newer than
// latest.
func apply(ctx context.Context, db *sql.DB, m migration, latest int) error {
	return inTx(ctx, db, func(tx *sql.Tx) error {
		current, err := schemaVersion(ctx, tx, latest)
		if err != nil {
			return err
		}
		if current >= m.version {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			m.version, time.Now().UTC().UnixNano())
		return err
	})
}

// schemaVersion returns the newest applied version, or ErrSchemaTooNew when it is past latest.
func schemaVersion(ctx context.Context, tx *sql.Tx, latest int) (int, error) {
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	if v > latest {
		return 0, fmt.Errorf("%w: database is at version %d, this binary knows up to %d", ErrSchemaTooNew, v, latest)
	}
	return v, nil
}
