package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// maxPrepared bounds the statements a pool keeps prepared: the listings' queries vary with
// their filters and the writes' with the fields they set, in a few hundred ways at most, of
// which a server runs far fewer often.
const maxPrepared = 256

// maxNoted bounds the statements transactions note for preparing before the next one.
const maxNoted = 64

// pool is a connection pool with its statements prepared once and kept: SQLite parses and
// plans a listing's query (three joins and a subquery) in about as long as it reads a page of
// it, and an agent step's append spent a sixth of its time parsing its INSERT and UPDATE, so a
// statement's text runs from its prepared statement from the second time on. database/sql
// prepares a statement again on each connection of the pool that runs it. Both the readers
// and the single writer are pools.
//
// The cache holds the max statements used last: a statement met when it is full takes the
// place of the one unused longest, which is closed. A client that sends many kinds of query
// (every combination of a listing's filters) then costs the others only the preparing of
// their statements again, not their statements' place for good. A statement is closed only
// once no caller is between taking it and running it (users): from then on database/sql
// itself keeps it for the rows and the transactions' statements made from it, until they end.
type pool struct {
	*sql.DB
	max int

	mu       sync.Mutex
	prepared map[string]*cached
	tick     uint64 // counts the statements taken, for cached.used
	// noted are the statements transactions ran unprepared, to prepare before the next.
	noted []string
}

// cached is a prepared statement in a pool's cache, or one put out of it and not yet closed.
type cached struct {
	st      *sql.Stmt
	used    uint64 // the pool's tick when it was last taken
	users   int    // callers that took it and have not released it
	evicted bool   // out of the cache: closed once users is 0
}

func newPool(db *sql.DB) *pool {
	return &pool{DB: db, max: maxPrepared, prepared: map[string]*cached{}}
}

// take returns the prepared statement of query, for the caller to run and then release; nil
// when it is not cached and prepare is false, or when preparing failed (the plain query then
// says why). release is never nil.
func (r *pool) take(ctx context.Context, query string, prepare bool) (*sql.Stmt, func()) {
	r.mu.Lock()
	c, ok := r.prepared[query]
	if ok {
		r.useLocked(c)
	}
	r.mu.Unlock()
	switch {
	case ok:
		return c.st, func() { r.release(c) }
	case !prepare:
		return nil, func() {}
	}
	st, err := r.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, func() {}
	}
	r.mu.Lock()
	if old, ok := r.prepared[query]; ok { // prepared meanwhile by another caller
		r.useLocked(old)
		r.mu.Unlock()
		st.Close()
		return old.st, func() { r.release(old) }
	}
	var out *sql.Stmt
	if len(r.prepared) >= r.max {
		out = r.evictLocked()
	}
	c = &cached{st: st}
	r.useLocked(c)
	r.prepared[query] = c
	r.mu.Unlock()
	if out != nil {
		out.Close()
	}
	return st, func() { r.release(c) }
}

// useLocked marks c taken by one more caller, and used last. The caller holds r.mu.
func (r *pool) useLocked(c *cached) {
	r.tick++
	c.used, c.users = r.tick, c.users+1
}

// evictLocked puts the statement unused longest out of the cache, and returns it when it is
// to be closed now (no caller holds it). The caller holds r.mu.
func (r *pool) evictLocked() *sql.Stmt {
	var oldest string
	var o *cached
	for q, c := range r.prepared {
		if o == nil || c.used < o.used {
			oldest, o = q, c
		}
	}
	if o == nil {
		return nil
	}
	delete(r.prepared, oldest)
	o.evicted = true
	if o.users > 0 {
		return nil
	}
	return o.st
}

// release ends a caller's use of c, and closes c if it was put out of the cache meanwhile and
// this was its last user.
func (r *pool) release(c *cached) {
	r.mu.Lock()
	c.users--
	closeNow := c.evicted && c.users == 0
	r.mu.Unlock()
	if closeNow {
		c.st.Close()
	}
}

func (r *pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, release := r.take(ctx, query, true)
	defer release()
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, query, args...)
}

func (r *pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, release := r.take(ctx, query, true)
	defer release()
	if st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.DB.QueryRowContext(ctx, query, args...)
}

func (r *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, release := r.take(ctx, query, true)
	defer release()
	if st != nil {
		return st.ExecContext(ctx, args...)
	}
	return r.DB.ExecContext(ctx, query, args...)
}

// execIn runs a statement in tx, a transaction of this pool, from its prepared statement.
func (r *pool) execIn(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, release := r.cachedIn(ctx, tx, query)
	defer release()
	if st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRowIn runs a query of one row in tx, a transaction of this pool, from its prepared
// statement.
func (r *pool) queryRowIn(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	st, release := r.cachedIn(ctx, tx, query)
	defer release()
	if st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// prepareIn returns query's prepared statement for use in tx, a transaction of this pool; the
// caller closes it, and it is closed with the transaction anyway.
func (r *pool) prepareIn(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, release := r.cachedIn(ctx, tx, query)
	defer release()
	if st != nil {
		return st, nil
	}
	return tx.PrepareContext(ctx, query)
}

// cachedIn returns the prepared statement of query as a statement of tx, a transaction of
// this pool, or nil; the caller releases it once it ran it. A statement not prepared yet is
// noted, for prepareNoted: preparing it now would need a connection of the pool, and the
// writer's only one is the transaction's.
func (r *pool) cachedIn(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, func()) {
	st, release := r.take(ctx, query, false)
	if st != nil {
		return tx.StmtContext(ctx, st), release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.noted) < maxNoted && !slices.Contains(r.noted, query) {
		r.noted = append(r.noted, query)
	}
	return nil, release
}

// prepareNoted prepares the statements transactions noted; it runs before a transaction
// begins, while the caller holds no connection of the pool.
func (r *pool) prepareNoted(ctx context.Context) {
	r.mu.Lock()
	noted := r.noted
	r.noted = nil
	r.mu.Unlock()
	for _, q := range noted {
		_, release := r.take(ctx, q, true)
		release()
	}
}

// Close closes the statements, then the pool.
func (r *pool) Close() error {
	r.mu.Lock()
	for q, c := range r.prepared {
		c.st.Close()
		delete(r.prepared, q)
	}
	r.mu.Unlock()
	return r.DB.Close()
}
