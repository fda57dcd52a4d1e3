package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// The listings read their pages in two steps, as the SQLite store's do: first the page's
// keys and versions alone (an event's Seq; a start task's, a sandbox's or a conversation's id,
// creation time and rev, which migration 0012 increments on every change of what the
// listing shows, whatever replica makes it), from the owner's indexes; then, in one statement,
// only the rows that the listing cache (listingcache.Cache) does not hold at those versions.
// Decoding a page's rows through pgx, and reading them (with the joins of a conversation's
// sandbox and start task) in PostgreSQL, cost many times what the versions do.
//
// Another replica may change any row at any time, so the versions are read again for every
// page: unlike the SQLite store, this store keeps no pages, as it has no cheap way to know
// that nothing changed. The versions and the rows are read in two statements, each seeing
// what committed before it: a row changed in between is read as it is now, with its new rev,
// and one deleted in between is left out of the page.

// readVersions reads the versions of a page, with query and args: each row's id, creation
// time and rev, and, when byPos, its position (a time) after them; a listing in order of
// creation reads no position, as its position is its creation time.
func readVersions(ctx context.Context, s *Store, byPos bool, query string, args []any, n int) ([]listingcache.Version[string], error) {
	var v listingcache.Version[string]
	var created, pos time.Time
	dest := []any{&v.Key, &created, &v.Rev, &pos}
	if !byPos {
		dest = dest[:3]
	}
	return readPage(ctx, s, query, args, n, dest, func() listingcache.Version[string] {
		v.Created, v.Pos = listingcache.TimeKey(created), listingcache.TimeKey(created)
		if byPos {
			v.Pos = timeKey(pos)
		}
		return v
	})
}

// readListed reads the versions of a page in order of creation, as readVersions does, as the
// paging.Listed that a store returns them as (ListConversationVersions), and the next
// page's cursor: a page of size rows, read with query (without its LIMIT) and w's arguments.
// It reads them straight into what it returns, as a page's versions and their copy were a
// quarter of what a conversation listing allocated.
func readListed(ctx context.Context, s *Store, query string, w *where, size int) ([]paging.Listed, string, error) {
	var l paging.Listed
	var created time.Time
	ls, err := readPage(ctx, s, query+limit(size+1), w.args, size+1, []any{&l.ID, &created, &l.Rev}, func() paging.Listed {
		l.Created = listingcache.TimeKey(created)
		return l
	})
	if err != nil {
		return nil, "", err
	}
	ls, next := page(ls, size, func(l paging.Listed) (int64, string) { return l.Created, l.ID })
	return ls, next, nil
}

// readSeqs reads the sequence numbers of a page of events, with query and args.
func readSeqs(ctx context.Context, s *Store, query string, args []any, n int) ([]listingcache.Version[int64], error) {
	var v listingcache.Version[int64]
	return readPage(ctx, s, query, args, n, []any{&v.Key}, func() listingcache.Version[int64] { return v })
}

// readPage reads up to n rows with query and args: each is scanned into dest, the same
// variables for every row (which would otherwise each be allocated for each row), and row
// returns what they hold.
func readPage[V any](ctx context.Context, s *Store, query string, args []any, n int, dest []any, row func() V) ([]V, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]V, 0, n)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, row())
	}
	return out, rows.Err()
}

// pageVersions reads the versions of a page of size rows (readVersions), with query (without
// its LIMIT) and w's arguments, and makes the next page's cursor from them: where its last row
// stood when the page was read. A listing then reads the rows at those versions (at).
func pageVersions(ctx context.Context, s *Store, byPos bool, query string, w *where, size int) ([]listingcache.Version[string], string, error) {
	versions, err := readVersions(ctx, s, byPos, query+limit(size+1), w.args, size+1)
	if err != nil {
		return nil, "", err
	}
	versions, next := page(versions, size, func(v listingcache.Version[string]) (int64, string) { return v.Pos, v.Key })
	return versions, next, nil
}

// listed are the tables whose listings read versions first: how their rows are kept in the
// cache, and how to read them whole.
var (
	listedEvents = listingcache.Rows[int64, event.Event, pgx.Row]{Table: listingcache.Events, Select: eventSelect, KeyColumn: "e.seq",
		Scan: func(row pgx.Row) (listingcache.Read[event.Event], error) {
			e, err := scanEvent(row)
			return listingcache.Read[event.Event]{Row: e}, err
		},
	}
	listedTasks = listingcache.Rows[string, conversation.StartTask, pgx.Row]{Table: listingcache.Tasks,
		Select: `SELECT ` + taskColumns + ` FROM start_tasks`, KeyColumn: "id", Scan: listingcache.ScanTask(scanTask)}
	listedSandboxes = listingcache.Rows[string, sandbox.Sandbox, pgx.Row]{Table: listingcache.Sandboxes,
		Select: `SELECT ` + listedSandboxColumns + `, rev FROM sandboxes`, KeyColumn: "id", Scan: listingcache.ScanSandbox(scanSandboxWith)}
	listedConversations = listingcache.Rows[string, conversation.View, pgx.Row]{Table: listingcache.Conversations,
		Select: listSelect, KeyColumn: "c.id", Scan: listingcache.ScanView(scanView)}
)

// ownedAt returns the rows of l that ls names, at those versions (at), and leaves out those
// another owner than ownerID has; what names the rows in an error.
func ownedAt[T any](ctx context.Context, s *Store, l listingcache.Rows[string, T, pgx.Row], ownerID string, ls []paging.Listed, what string) ([]T, error) {
	rows, err := at(ctx, s, l, listingcache.Versions(ls))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l.Owned(rows, ownerID), nil
}

// at returns the rows at versions, in their order: from s's cache where it holds that
// version, and otherwise from the database, in one statement whatever their number (the keys
// bound as one array), into the cache (listingcache.Table.At).
func at[K comparable, T any](ctx context.Context, s *Store, l listingcache.Rows[K, T, pgx.Row], versions []listingcache.Version[K]) ([]T, error) {
	return l.At(s.listings, versions, func(keys []K) ([]listingcache.Read[T], error) {
		return collect(ctx, s.pool, l.Scan, l.Select+` WHERE `+l.KeyColumn+` = ANY($1)`, keys)
	})
}
