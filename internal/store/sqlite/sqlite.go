// Package sqlite is the SQLite implementation of store.Store: one database file, written through
// a single connection and read through a pool, with the schema migrated on Open.
//
// Every write goes through one connection that begins IMMEDIATE transactions, so writers from
// many goroutines queue in database/sql instead of failing with SQLITE_BUSY, and writers from
// another process wait up to the busy timeout. Readers use a separate pool and, thanks to WAL,
// never block the writer nor wait for it. With WAL and synchronous=NORMAL a committed
// transaction survives the death of the process (kill -9); it may not survive a power loss.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// busyTimeoutMillis bounds how long a connection waits for a lock held by another process.
const busyTimeoutMillis = 10_000

// DefaultCacheBytes is the page cache of a Store whose Options name none.
const DefaultCacheBytes = 4 << 20

// minCacheKiB is the least page cache a connection gets, whatever the budget: 16 pages.
const minCacheKiB = 64

// Store is a store.Store kept in one SQLite database file. Safe for concurrent use.
type Store struct {
	w *pool // the only writer: one connection, IMMEDIATE transactions
	r *pool // readers, query_only
	// Both pools keep their statements prepared.
	// one runs a single write statement outside a transaction (see autocommit).
	one autocommit
	// records queues the appends of RecordEvents for the writer (records.go).
	records records
	// ckpt checkpoints the WAL beside the writer (checkpoint.go).
	ckpt *checkpointer
	// listings keeps the rows listed last, and pages (listingcache.go); nil when off.
	listings *listingcache.Cache
	// changes tells whether the database changed since what the caches keep as of a data
	// version (pages, API keys) was read (dataversion.go).
	changes *dataVersion
	// keys keeps the API keys found lately (apikeycache.go).
	keys apiKeyCache

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Options tune a Store; the zero value is the defaults.
type Options struct {
	// Observer, when set, is told the time of every statement.
	Observer QueryObserver
	// CacheBytes is the page cache of the whole Store, shared equally by its connections
	// (the writer and the readers), as SQLite counts it; 0 means DefaultCacheBytes. SQLite's
	// default of 2,000 KiB for each connection would grow with the readers, whose number
	// follows the CPUs, and the memory it holds is outside the Go heap and its limit. A
	// reader's cache lasts only until the next write anyway (SQLite drops it when it sees
	// that the file changed), so under load it helps within one query at most.
	CacheBytes int64
	// ListingCacheBytes bounds the events, start tasks, sandboxes and conversations that
	// listings keep in memory to read them again by their keys and versions alone (see
	// listingcache): 0 means DefaultListingCacheBytes, a negative value none.
	ListingCacheBytes int64
	// trace, when set, is told the text and arguments of every query (the readers' only),
	// for tests of the query plans.
	trace func(query string, args []driver.NamedValue)
}

// Open opens the database file at path, creating it if needed (its directory must exist), and
// migrates its schema. It refuses a database whose schema is newer than this binary
// (ErrSchemaTooNew). Several Stores, in one process or several, may open the same file; ctx
// bounds only the opening.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := registerFunctions(); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: register functions: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0)) // readers
	cacheKiB := cacheShare(o.CacheBytes, n+1)
	w, err := openWriter(ctx, abs, cacheKiB, o.Observer)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	r, err := openDB(dsn(abs, false, cacheKiB), PoolRead, o.Observer, o.trace)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	// The data version's connection, read-only like the readers, with the least page cache:
	// the pragma reads no page.
	dv, err := openDB(dsn(abs, false, minCacheKiB), PoolRead, nil, nil)
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	listings := o.ListingCacheBytes
	if listings == 0 {
		listings = DefaultListingCacheBytes
	}
	s := &Store{w: newPool(w), r: newPool(r), ckpt: newCheckpointer(), listings: listingcache.New(listings), changes: newDataVersion(dv)}
	s.one = autocommit{s.w, s.ckpt}
	go s.ckpt.run(s.r)
	return s, nil
}

// cacheShare is each of conns connections' page cache in KiB when they share budget bytes
// (0: DefaultCacheBytes).
func cacheShare(budget int64, conns int) int64 {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return max(minCacheKiB, budget>>10/int64(conns))
}

// openWriter opens the single writing connection, with a page cache of cacheKiB, and
// switches the file to WAL.
func openWriter(ctx context.Context, path string, cacheKiB int64, obs QueryObserver) (*sql.DB, error) {
	w, err := openDB(dsn(path, true, cacheKiB), PoolWrite, obs, nil)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := enableWAL(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// openDB opens a pool of connections to dsn, timed by obs when it is set.
func openDB(dsn, pool string, obs QueryObserver, trace func(string, []driver.NamedValue)) (*sql.DB, error) {
	c, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	if obs != nil || trace != nil {
		if obs == nil {
			obs = noObserver{}
		}
		c = observedConnector{Connector: c, pool: pool, obs: obs, trace: trace}
	}
	return sql.OpenDB(c), nil
}

// enableWAL switches the file to WAL and checks that WAL is really in force: some file systems
// refuse it silently, and the durability and concurrency above depend on it. SQLite does not
// call the busy handler while it switches the mode of a new file, so when several processes
// open one new file at once the losers get SQLITE_BUSY; they retry here for as long as the busy
// timeout would have let them wait.
func enableWAL(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(busyTimeoutMillis * time.Millisecond)
	pause := time.Millisecond
	for {
		var mode string
		err := w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil && !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("journal mode is %q, want wal", mode)
		}
		if !isBusy(err) || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("set journal mode: %w", err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("set journal mode: %w", ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// dsn builds the driver's connection string, for connections with a page cache of cacheKiB.
// The path goes in a file: URI so that characters such as '?' and '#' in it are escaped
// rather than read as URI syntax.
func dsn(path string, writer bool, cacheKiB int64) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMillis))
	q.Set("_foreign_keys", "on")
	q.Set("_pragma", fmt.Sprintf("cache_size(-%d)", cacheKiB)) // negative: in KiB, not pages
	if writer {
		// The checkpointer checkpoints, not the commits (checkpoint.go).
		q.Add("_pragma", "wal_autocheckpoint(0)")
		q.Set("_synchronous", "NORMAL")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("_query_only", "on")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Close closes both connection pools. Safe to call twice; the second call returns the first
// call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.ckpt.close()
		s.closeErr = errors.Join(s.changes.close(), s.r.Close(), s.w.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("close sqlite store: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// ReleaseMemory gives back the memory SQLite holds, and empties the listing and key caches.
// It closes every idle connection (the readers, the writer, the data version's), which frees
// all each held: its page cache, parsed schema and prepared statements, and, once no
// connection is left, the mapping of the WAL's index, which grows with the WAL (1.5-2.7 MiB
// after a burst of conversations). The memory SQLite frees stays with the C library's
// allocator (modernc.org/libc), which keeps it for reuse: only an unexported Trim of that
// allocator would unmap it (docs/architecture.md). The pools open connections again as queries need them; one busy now is left alone, and this
// waits for none. The last connection's close checkpoints the WAL and removes it, as when the
// store closes. Emptying the page caches alone (PRAGMA shrink_memory) left about 1.5 MiB more
// resident, and a writer kept open keeps the index mapped.
func (s *Store) ReleaseMemory() error {
	s.listings.Clear()
	s.keys.clear()
	closeIdle(s.r.DB)
	closeIdle(s.w.DB)
	s.changes.release()
	return nil
}

// closeIdle closes db's idle connections; the pool keeps as many idle again afterwards as it
// opens at most.
func closeIdle(db *sql.DB) {
	n := db.Stats().MaxOpenConnections
	db.SetMaxIdleConns(0)
	db.SetMaxIdleConns(n)
}

// Ping reads from both connection pools: the readers, and the single writing connection,
// which answers only once the write in progress, if any, is done.
func (s *Store) Ping(ctx context.Context) error {
	for _, db := range []*sql.DB{s.r.DB, s.w.DB} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
			return fmt.Errorf("ping sqlite store: %w", err)
		}
	}
	return nil
}
