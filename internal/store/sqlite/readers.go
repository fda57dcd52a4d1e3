package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxPrepared bounds the statements readers keeps prepared: the listings' queries vary with
// their filters, but only in a few ways, so a bounded cache holds them all.
const maxPrepared = 256

// readers is the reading pool with its queries prepared once and kept: SQLite parses and
// plans a listing's query (three joins and a subquery) in about as long as it reads a page of
// it, so a query text runs from its prepared statement from the second time on. database/sql
// prepares a statement again on each connection of the pool that runs it.
type readers struct {
	*sql.DB

	mu       sync.Mutex
	prepared map[string]*sql.Stmt
}

func newReaders(db *sql.DB) *readers {
	return &readers{DB: db, prepared: map[string]*sql.Stmt{}}
}

// stmt returns the prepared statement of query, or nil when it cannot be had (the cache is
// full, or preparing failed: the plain query then says why).
func (r *readers) stmt(ctx context.Context, query string) *sql.Stmt {
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

func (r *readers) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, query, args...)
}

func (r *readers) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.DB.QueryRowContext(ctx, query, args...)
}

// Close closes the statements, then the pool.
func (r *readers) Close() error {
	r.mu.Lock()
	for q, st := range r.prepared {
		st.Close()
		delete(r.prepared, q)
	}
	r.mu.Unlock()
	return r.DB.Close()
}
