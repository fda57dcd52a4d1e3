package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// inTx runs fn in one transaction of db and commits it if fn returns nil; otherwise nothing fn
// did is kept. On the writer pool the transaction is IMMEDIATE (see dsn).
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// write runs fn in a write transaction, after preparing the statements earlier ones noted.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	s.w.prepareNoted(ctx)
	if err := inTx(ctx, s.w.DB, fn); err != nil {
		return err
	}
	s.ckpt.committed()
	return nil
}

// countForUser counts the user's rows of table, owner naming the column that holds the user
// (both are this package's constants, never input), in a write transaction. A creation
// bounded per user counts so, then inserts in the same transaction: with one writer at a
// time, the count holds until it commits.
func countForUser(ctx context.Context, tx *sql.Tx, table, owner, userID string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE `+owner+` = ?`, userID).Scan(&n)
	return n, err
}

// autocommit runs single statements on the writer outside a transaction. SQLite commits
// such a statement as it runs, and the driver reports a context that ended meanwhile as the
// statement's error even when it took effect. A statement that begins therefore runs to its
// end whatever ctx does, so that a write reported as failed never took effect (a caller that
// saw an error, say at shutdown, must not find the row there afterwards). It runs from the
// writer pool's prepared statements.
type autocommit struct {
	db   *pool
	ckpt *checkpointer
}

func (a autocommit) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := a.db.ExecContext(context.WithoutCancel(ctx), query, args...)
	if err == nil {
		a.ckpt.committed()
	}
	return res, err
}

// queryer is what both the pools and a transaction offer, so a read can run in either.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// execer is what both the writer pool and a transaction offer, so a single-statement write can
// run alone or inside a larger transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// collect scans every row of a query with scan.
func collect[T any](ctx context.Context, q queryer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func sqliteCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isUnique reports a PRIMARY KEY or UNIQUE constraint violation.
func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// isBusy reports SQLITE_BUSY, with any extended code.
func isBusy(err error) bool {
	return sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY
}

// isForeignKey reports a FOREIGN KEY constraint violation.
func isForeignKey(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// where accumulates the conditions of a query and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// inList is the condition that a column is one of a list bound as one argument, a JSON array
// (listArg): the statement's text is then the same whatever the list's length, so it is
// prepared once (pool.stmt), where "IN (?, ?, …)" would fill the pool's bounded cache of
// prepared statements with one text per length.
const inList = ` IN (SELECT value FROM json_each(?))`

// listArg binds a list for inList.
func listArg[T any](list []T) (string, error) {
	b, err := json.Marshal(list)
	return string(b), err
}

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// mustAffect returns notFound when res changed no row.
func mustAffect(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}
