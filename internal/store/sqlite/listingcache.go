package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// DefaultListingCacheBytes is the listing cache of a Store whose Options name none.
const DefaultListingCacheBytes = listingcache.DefaultBytes

// The listing cache (listingcache.Cache) keeps the events, start tasks, sandboxes and
// conversations listed most recently, and, of this store alone, pages of those listings: the
// keys and versions a listing's query read, by the query and its arguments, as of the
// database's data version when they were read (dataVersion). While no commit comes, a page
// listed again costs a look at the data version instead of a read of its rows' versions,
// which through the transpiled SQLite costs about a µs a row. A start task's or a sandbox's
// rev is incremented by a trigger on every update of the row (migration 0012); a
// conversation's also counts the changes of its sandbox and latest start task that its
// listing shows (migration 0013).

// scanRowVersion scans a row's id, creation time, rev and position.
func scanRowVersion(sc scanner) (listingcache.Version[string], error) {
	var v listingcache.Version[string]
	err := sc.Scan(&v.Key, &v.Created, &v.Rev, &v.Pos)
	return v, err
}

// scanCreatedVersion scans a row's id, creation time and rev, of a listing in order of
// creation: its position is its creation time. A column less to read is a tenth less of the
// listing's first read.
func scanCreatedVersion(sc scanner) (listingcache.Version[string], error) {
	var v listingcache.Version[string]
	err := sc.Scan(&v.Key, &v.Created, &v.Rev)
	v.Pos = v.Created
	return v, err
}

// listVersions reads the versions of a page of limit rows (pageVersions), with query
// (without its LIMIT) and args, scanned by scan (scanRowVersion or scanCreatedVersion), and
// makes the next page's cursor from them: where its last row stood when the page was read. A
// listing then reads the rows at those versions (at). The versions may be shared with other
// callers, who only read them.
func listVersions(ctx context.Context, s *Store, scan func(scanner) (listingcache.Version[string], error),
	query string, args []any, limit int) ([]listingcache.Version[string], string, error) {
	versions, err := pageVersions(ctx, s, scan, query, args, limit+1)
	if err != nil {
		return nil, "", err
	}
	versions, next := page(versions, limit, func(v listingcache.Version[string]) (int64, string) { return v.Pos, v.Key })
	return versions, next, nil
}

// pageVersions reads the versions of up to n rows with query (without its LIMIT) and args,
// or takes them from the cache when no commit came since they were read (dataVersion). When
// the data version is not looked at (Store.keptVersion), it reads them and keeps nothing.
// The versions returned may be shared with other callers, who only read them.
func pageVersions[K comparable](ctx context.Context, s *Store, scan func(scanner) (listingcache.Version[K], error), query string, args []any, n int) ([]listingcache.Version[K], error) {
	read := func() ([]listingcache.Version[K], error) {
		return collect(ctx, s.r, scan, query+` LIMIT ?`, append(args, n)...)
	}
	if s.listings == nil {
		return read()
	}
	version, ok := s.keptVersion(ctx)
	if !ok {
		return read()
	}
	key := listingcache.Key{Kind: listingcache.KindPage, ID: pageKey(query, args, n)}
	if x := s.listings.Get(key, version, 0); x != nil {
		return x.Row.([]listingcache.Version[K]), nil
	}
	versions, err := read()
	if err == nil {
		s.listings.Put(&listingcache.Entry{Key: key, Cost: pageCost(key.ID, versions), Created: version, Row: versions})
	}
	return versions, err
}

// pageKey names a page by its query, arguments and number of rows. Arguments are written with
// their types and strings with their lengths, so that no two different lists of arguments
// share a key.
func pageKey(query string, args []any, n int) string {
	b := make([]byte, 0, len(query)+16*len(args)+8)
	b = append(b, query...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(n), 10)
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b = append(b, "\x00s"...)
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		case int64:
			b = append(b, "\x00i"...)
			b = strconv.AppendInt(b, v, 10)
		case int:
			b = append(b, "\x00i"...)
			b = strconv.AppendInt(b, int64(v), 10)
		case bool:
			b = append(b, "\x00b"...)
			b = strconv.AppendBool(b, v)
		default:
			b = fmt.Appendf(b, "\x00%T:%#v", v, v)
		}
	}
	return string(b)
}

func pageCost[K comparable](key string, versions []listingcache.Version[K]) int {
	n := len(key) + listingcache.EntryOverhead
	for _, v := range versions {
		n += 40
		if k, ok := any(v.Key).(string); ok {
			n += len(k)
		}
	}
	return n
}

// listed are the tables whose listings read versions first: how their rows are kept in the
// cache, and how to read them whole.
var (
	listedEvents = listingcache.Rows[int64, event.Event, scanner]{Table: listingcache.Events,
		// One rowid lookup for each.
		Select: eventSelect, KeyColumn: "e.seq",
		Scan: func(sc scanner) (listingcache.Read[event.Event], error) {
			e, err := scanEvent(sc)
			return listingcache.Read[event.Event]{Row: e}, err
		},
	}
	listedTasks = listingcache.Rows[string, conversation.StartTask, scanner]{Table: listingcache.Tasks,
		Select: `SELECT ` + taskColumns + ` FROM start_tasks`, KeyColumn: "id", Scan: listingcache.ScanTask(scanTask)}
	listedSandboxes = listingcache.Rows[string, sandbox.Sandbox, scanner]{Table: listingcache.Sandboxes,
		Select: `SELECT ` + listedSandboxColumns + `, rev FROM sandboxes`, KeyColumn: "id", Scan: listingcache.ScanSandbox(scanSandboxWith)}
	listedConversations = listingcache.Rows[string, conversation.View, scanner]{Table: listingcache.Conversations,
		Select: listSelect, KeyColumn: "c.id", Scan: listingcache.ScanView(scanView)}
)

// ownedAt returns the rows of l that ls names, at those versions (at), and leaves out those
// another owner than ownerID has; what names the rows in an error.
func ownedAt[T any](ctx context.Context, s *Store, l listingcache.Rows[string, T, scanner], ownerID string, ls []paging.Listed, what string) ([]T, error) {
	rows, err := at(ctx, s, l, listingcache.Versions(ls))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l.Owned(rows, ownerID), nil
}

// at returns the rows at versions, in their order: from s's cache where it holds that
// version, and otherwise from the database, in one statement whatever their number (the keys
// are bound as one JSON array: inList), into the cache (listingcache.Table.At).
func at[K comparable, T any](ctx context.Context, s *Store, l listingcache.Rows[K, T, scanner], versions []listingcache.Version[K]) ([]T, error) {
	return l.At(s.listings, versions, func(keys []K) ([]listingcache.Read[T], error) {
		list, err := listArg(keys)
		if err != nil {
			return nil, err
		}
		return collect(ctx, s.r, l.Scan, l.Select+` WHERE `+l.KeyColumn+inList, list)
	})
}
