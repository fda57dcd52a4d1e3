package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Writes and cancellation. The contexts of writes end at any moment (a request cut short, a
// shutdown), and pgx reports a context that ends while it waits for the server's answer as
// the statement's error, whether or not the server carried it out. So the step that makes a
// write durable (the COMMIT of a transaction, or a statement outside one) runs to its end
// whatever ctx does: a write reported as failed never took effect, and one reported as done
// did. What comes before that step (waiting for a connection, the statements of a
// transaction, the locks they wait for) still stops with ctx, and then nothing is written.

// write runs fn in a transaction and commits it if fn returns nil; otherwise nothing fn did
// is kept.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		// The connection goes back to the pool either way; a rollback that fails (ctx
		// ended) closes it, which ends the transaction on the server too.
		if rerr := tx.Rollback(ctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) && ctx.Err() == nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit(context.WithoutCancel(ctx))
}

// writeBatch runs a transaction in one round trip and its COMMIT: queue queues its statements
// in a batch that begins it (pgx's Batch.BeginTx, which saves the round trip of a BEGIN of
// its own), read reads their results, and the transaction commits if both return nil;
// otherwise nothing it did is kept. The server runs all of the statements before read looks
// at any result, so a condition that one of them reads (a lock's, a row count) is checked by
// read, and a write made before it failed is undone by the rollback.
func (s *Store) writeBatch(ctx context.Context, queue func(*pgx.Batch) error, read func(pgx.BatchResults) error) error {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	if err := queue(&b); err != nil {
		return err
	}
	br := s.pool.SendBatch(ctx, &b)
	tx := br.Tx()
	_, err := br.Exec() // the BEGIN
	if err == nil {
		err = read(br)
	}
	// Close reads what read left; its error is news only when read found none.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if rerr := tx.Rollback(ctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) && ctx.Err() == nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit(context.WithoutCancel(ctx))
}

// exec runs one write statement outside a transaction (PostgreSQL commits it as it runs):
// it waits for a connection under ctx, then runs the statement to its end whatever ctx does.
func (s *Store) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(context.WithoutCancel(ctx), sql, args...)
}

// execOne is exec for a statement that must change a row: notFound when it changed none.
func (s *Store) execOne(ctx context.Context, notFound error, sql string, args ...any) error {
	tag, err := s.exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	return mustAffect(tag, notFound)
}

// querier is what both the pool and a transaction offer, so a statement can run in either.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// collect scans every row of a query with scan.
func collect[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
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

// SQLSTATE codes the store tells apart.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeNotNullViolation    = "23502"
)

func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// isUnique reports a PRIMARY KEY or UNIQUE constraint violation.
func isUnique(err error) bool { return pgCode(err) == codeUniqueViolation }

// isForeignKey reports a FOREIGN KEY constraint violation.
func isForeignKey(err error) bool { return pgCode(err) == codeForeignKeyViolation }

// isNullIn reports a NOT NULL constraint violation in column.
func isNullIn(err error, column string) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == codeNotNullViolation && e.ColumnName == column
}

// where accumulates the conditions of a query and their arguments, numbering the
// placeholders: w.add("owner_id = " + w.arg(ownerID)).
type where struct {
	conds []string
	args  []any
}

// arg appends v to the arguments and returns its placeholder.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

func (w *where) add(cond string) { w.conds = append(w.conds, cond) }

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// mustAffect returns notFound when tag reports no row changed.
func mustAffect(tag pgconn.CommandTag, notFound error) error {
	if tag.RowsAffected() == 0 {
		return notFound
	}
	return nil
}
