package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// maxPrepared bounds the statements a pool keeps prepared: the listings' queries vary with
// their filters and the writes' with the fields they set, but only in a few ways, so a
// bounded cache holds them all.
const maxPrepared = 256

// pool is a connection pool with its statements prepared once and kept: SQLite parses and
// plans a listing's query (three joins and a subquery) in about as long as it reads a page of
// it, and an agent step's append spent a sixth of its time parsing its INSERT and UPDATE, so a
// statement's text runs from its prepared statement from the second time on. database/sql
// prepares a statement again on each connection of the pool that runs it. Both the readers
// and the single writer are pools.
type pool struct {
	*sql.DB

	mu       sync.Mutex
	prepared map[string]*sql.Stmt
	// noted are the statements transactions ran unprepared, to prepare before the next.
	noted []string
}

func newPool(db *sql.DB) *pool {
	return &pool{DB: db, prepared: map[string]*sql.Stmt{}}
}

// stmt returns the prepared statement of query, or nil when it cannot be had (the cache is
// full, or preparing failed: the plain query then says why).
func (r *pool) stmt(ctx context.Context, query string) *sql.Stmt {
	r.mu.Lock()
	st, ok := r.prepared[query]
	full := len(r.prepared) >= maxPrepared
	r.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := r.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.prepared[query]; ok {
		st.Close()
		return old
	}
	r.prepared[query] = st
	return st
}

func (r *pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, query, args...)
}

func (r *pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.DB.QueryRowContext(ctx, query, args...)
}

func (r *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return r.DB.ExecContext(ctx, query, args...)
}

// execIn runs a statement in tx, a transaction of this pool, from its prepared statement.
func (r *pool) execIn(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := r.cached(query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRowIn runs a query of one row in tx, a transaction of this pool, from its prepared
// statement.
func (r *pool) queryRowIn(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := r.cached(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// prepareIn returns query's prepared statement for use in tx, a transaction of this pool; the
// caller closes it, and it is closed with the transaction anyway.
func (r *pool) prepareIn(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st := r.cached(query); st != nil {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// cached returns the prepared statement of query for use in a transaction, or nil. A
// statement not prepared yet is noted, for prepareNoted: preparing it now would need a
// connection of the pool, and the writer's only one is the transaction's.
func (r *pool) cached(query string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.prepared[query]
	if !ok && len(r.prepared)+len(r.noted) < maxPrepared && !slices.Contains(r.noted, query) {
		r.noted = append(r.noted, query)
	}
	return st
}

// prepareNoted prepares the statements transactions noted; it runs before a transaction
// begins, while the caller holds no connection of the pool.
func (r *pool) prepareNoted(ctx context.Context) {
	r.mu.Lock()
	noted := r.noted
	r.noted = nil
	r.mu.Unlock()
	for _, q := range noted {
		r.stmt(ctx, q)
	}
}

// Close closes the statements, then the pool.
func (r *pool) Close() error {
	r.mu.Lock()
	for q, st := range r.prepared {
		st.Close()
		delete(r.prepared, q)
	}
	r.mu.Unlock()
	return r.DB.Close()
}
