package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// dataVersion tells whether anything in the database changed since an earlier look: SQLite's
// PRAGMA data_version, which a connection sees change whenever another connection commits
// (this Store's writer, or another process on the same file). The caches that trust it (pages
// of listings, API keys) then need no hook in every write that could make them stale, and a
// change made outside this Store is seen as soon as any other.
//
// The pragma is a property of the connection that runs it, so it runs on one connection of its
// own, its statement prepared on the driver's connection directly: through database/sql, the
// look costs half as much again. Safe for concurrent use; looks are serialized, each about ten
// µs.
type dataVersion struct {
	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn // nil until the first look, and after a failed one
	// conns counts the connections looked on. A new connection counts its versions from the
	// start again, so a version is the pragma's value with the count above it: no version
	// of a later connection equals one of an earlier.
	conns int64
	stmt  driver.Stmt
	dest  [1]driver.Value
	// seen is the count of the writer's commits at the last call of Store.keptVersion.
	seen atomic.Int64
}

// versionBits are the bits of a version that hold the pragma's value: 2^40 commits seen by
// one connection before two versions could meet.
const versionBits = 40

func newDataVersion(db *sql.DB) *dataVersion {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return &dataVersion{db: db}
}

// current returns the database's version as this connection sees it now. Two equal versions
// mean no commit came between the two looks. An error means not known: callers read the
// database instead of trusting what they keep.
func (d *dataVersion) current(ctx context.Context) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		c, err := d.db.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("data version: %w", err)
		}
		d.conn = c
		d.conns++
	}
	var v int64
	err := d.conn.Raw(func(dc any) error {
		if d.stmt == nil {
			p, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("the driver cannot prepare statements")
			}
			st, err := p.PrepareContext(ctx, `PRAGMA data_version`)
			if err != nil {
				return err
			}
			d.stmt = st
		}
		q, ok := d.stmt.(driver.StmtQueryContext)
		if !ok {
			return errors.New("the driver cannot query a prepared statement")
		}
		rows, err := q.QueryContext(ctx, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := rows.Next(d.dest[:]); err != nil {
			if err == io.EOF {
				return errors.New("no row")
			}
			return err
		}
		n, ok := d.dest[0].(int64)
		if !ok {
			return fmt.Errorf("a %T, not an integer", d.dest[0])
		}
		v = d.conns<<versionBits | n&(1<<versionBits-1)
		return nil
	})
	if err != nil {
		d.reset()
		return 0, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// reset gives the connection back (the pool closes it if it is broken), so that the next look
// starts on a fresh one.
func (d *dataVersion) reset() {
	if d.stmt != nil {
		d.stmt.Close()
		d.stmt = nil
	}
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
}

// release closes the connection; the next look opens another, whose versions differ from
// every earlier one.
func (d *dataVersion) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reset()
	closeIdle(d.db)
}

// close releases the connection and its pool.
func (d *dataVersion) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reset()
	return d.db.Close()
}

// keptVersion returns the data version to check what the caches keep as of a data version
// (pages, API keys), or false when they are not worth checking: when this store's writer
// committed since the last call, they are out of date, and what is read now would soon be
// too, so neither the look nor keeping what is read is worth it. Under a steady stream of
// writes (agents taking steps), the caches then cost an atomic load; once the writer is
// quiet between two calls, the look resumes.
func (s *Store) keptVersion(ctx context.Context) (int64, bool) {
	if c := s.ckpt.commits.Load(); s.changes.seen.Swap(c) != c {
		return 0, false
	}
	v, err := s.changes.current(ctx)
	return v, err == nil
}
