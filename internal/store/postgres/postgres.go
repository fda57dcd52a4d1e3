// Package postgres is the PostgreSQL implementation of store.Store, for several agentd
// replicas sharing one database. It talks to the server through a pgx connection pool and
// migrates the schema on Open (migrate.go), once however many replicas start together.
//
// It behaves as the SQLite store does, as the conformance suite (storetest) checks, with what
// PostgreSQL's concurrency needs on top. Transactions run at READ COMMITTED, PostgreSQL's
// default; where a transaction reads something and then writes on the strength of it (a count
// under a limit, "no user yet", the end of a log), it first takes a lock that every writer of
// that thing takes, so that concurrent callers queue instead of both acting on what they read:
//
//   - appends to a conversation's event log lock the conversation's row (events.go), so they
//     commit in the order of their Seq;
//   - the queue of pending messages, pull request numbers and skills of a conversation lock
//     its row too;
//   - a user's skills, webhooks and provider tokens are guarded by a transaction-scoped
//     advisory lock on the user (locks.go);
//   - Bootstrap and Reseal lock tables (auth.go, reseal.go).
//
// Text that is sorted or compared with < and > (ids, names) is COLLATE "C", so that listings
// come in byte order, as SQLite's, whatever the database's locale. JSON documents are text,
// never jsonb: a client reads back the very bytes that were stored, as with SQLite. Times are
// timestamptz, microseconds, read back in UTC.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// Store is a store.Store kept in a PostgreSQL database. Safe for concurrent use, by several
// Stores, in this process or others, on one database.
type Store struct {
	pool *pgxpool.Pool
	// listings keeps the rows listed last (listingcache.go); nil when off.
	listings *listingcache.Cache
	// keys keeps the API keys found while the Bus listens (keycache.go).
	keys keyCache

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// Options tune a Store; the zero value is the defaults.
type Options struct {
	// MaxConns bounds the connections the Store opens; 0 leaves it to the URL's
	// pool_max_conns, else pgx's default (the larger of 4 and the number of CPUs).
	MaxConns int32
	// ListingCacheBytes bounds the events, start tasks, sandboxes and conversations that
	// listings keep in memory to read them again by their keys and versions alone (see
	// listingcache.go): 0 means listingcache.DefaultBytes, a negative value none.
	ListingCacheBytes int64
	// KeyCacheTTL is how long a key that LookupAPIKey found is used again without reading
	// it, while a Bus on the store listens (keycache.go): 0 means DefaultKeyCacheTTL, a
	// negative value never.
	KeyCacheTTL time.Duration
	// trace, when set, is told the text of every query the pool runs (tests).
	trace func(sql string)
}

// Open connects to the database at url (a postgres:// URL or a key=value connection string,
// as libpq takes them) and migrates its schema. It refuses a database whose schema is newer
// than this binary (ErrSchemaTooNew). ctx bounds only the opening.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, errors.New("open postgres store: invalid connection string")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	// The locking of this store (see the package comment) counts on READ COMMITTED, whatever
	// default the server or database sets: each statement of a transaction sees what
	// committed before it, such as the appends that a row lock waited for.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		// Times come back in UTC, as the SQLite store returns them.
		c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}
	if o.trace != nil {
		cfg.ConnConfig.Tracer = tracer(o.trace)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	listings := o.ListingCacheBytes
	if listings == 0 {
		listings = listingcache.DefaultBytes
	}
	st := &Store{pool: pool, listings: listingcache.New(listings)}
	st.keys.ttl = o.KeyCacheTTL
	if st.keys.ttl == 0 {
		st.keys.ttl = DefaultKeyCacheTTL
	}
	return st, nil
}

// Close closes the pool's connections, waiting for those in use to come back. Safe to call
// twice.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// ReleaseMemory empties the listing cache and the key cache, which the server's next requests
// fill again; the rest of what the store holds is PostgreSQL's, in its own processes.
func (s *Store) ReleaseMemory() error {
	s.listings.Clear()
	s.keys.empty()
	return nil
}

// Ping reads the schema's version through the pool, which answers only while the server
// does (and not once the Store is closed).
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return fmt.Errorf("ping postgres store: %w", err)
	}
	return nil
}

// tracer tells a function the text of every query (Options.trace).
type tracer func(sql string)

func (t tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	t(data.SQL)
	return ctx
}

func (tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
