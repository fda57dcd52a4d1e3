package sqlite

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// DefaultListingCacheBytes is the listing cache of a Store whose Options name none.
const DefaultListingCacheBytes = 2 << 20

// listingCache keeps the rows listed most recently, up to a budget of bytes, so that a page
// listed again is read from the database as its rows' keys and versions alone (from an index)
// rather than row by row with every column: through database/sql and the transpiled SQLite,
// reading and copying the columns of a row costs many times what serving its bytes does. It
// holds four kinds of rows, and pages:
//
//   - events, by Seq. Events never change once stored and a Seq is never used again, even
//     after its event is deleted, so an entry is never stale: a deleted event is only no
//     longer listed, and its entry ages out.
//   - start tasks and sandboxes, by id, with the version they were read at: their creation
//     time and rev, which a trigger increments on every update of the row (migration 0012).
//     A row whose version differs is read again.
//   - conversations as listed (conversation.View), likewise by id and version. A
//     conversation's rev also counts the changes of its sandbox and latest start task that
//     the view shows (migration 0013).
//   - pages of those listings: the keys and versions a listing's query read, by the query and
//     its arguments, as of the database's data version when they were read (dataVersion).
//     While no commit comes, a page listed again costs a look at the data version instead of
//     a read of its rows' versions, which through the transpiled SQLite costs about a µs a
//     row.
//
// Safe for concurrent use; a nil *listingCache keeps nothing.
type listingCache struct {
	mu     sync.Mutex
	budget int
	size   int
	byKey  map[rowKey]*list.Element // of *cached
	order  list.List                // most recently used first
}

// Kinds of rows.
const (
	kindEvent byte = iota
	kindTask
	kindSandbox
	kindConversation
	kindPage
)

// rowKey names a cached row: an event by its Seq, a start task, a sandbox or a conversation by
// its id; a page by its query and arguments (pageKey).
type rowKey struct {
	kind byte
	seq  int64
	id   string
}

// cached is one entry: the row as read (an event.Event, a conversation.StartTask, a
// sandbox.Sandbox, a conversation.View, or a page's []rowVersion) and its version (0 for
// events; for a page, the data version it was read at).
type cached struct {
	key          rowKey
	cost         int
	created, rev int64
	row          any
}

// newListingCache returns a cache of budget bytes, or nil (no cache) when budget is not
// positive.
func newListingCache(budget int64) *listingCache {
	if budget <= 0 {
		return nil
	}
	return &listingCache{budget: int(budget), byKey: map[rowKey]*list.Element{}}
}

// entryOverhead is about what an entry, its list element and its map slot take besides its
// strings and bodies.
const entryOverhead = 300

func eventCost(e *event.Event) int {
	return len(e.ID) + len(e.ConversationID) + len(e.Kind) + len(e.Source) + len(e.Body) + len(e.LLMText) + entryOverhead
}

func taskCost(t *conversation.StartTask) int {
	return len(t.ID) + len(t.OwnerID) + len(t.Detail) + len(t.ConversationID) + len(t.SandboxID) + len(t.AgentServerURL) + len(t.Request) + entryOverhead
}

func sandboxCost(sb *sandbox.Sandbox) int {
	return len(sb.ID) + len(sb.OwnerID) + len(sb.SpecID) + len(sb.Backend) + len(sb.Status) + len(sb.Detail) +
		len(sb.SessionKeySealed) + len(sb.SessionKeyHash) + entryOverhead
}

func viewCost(v *conversation.View) int {
	c := &v.Conversation
	n := len(c.ID) + len(c.OwnerID) + len(c.SandboxID) + len(c.Version) + len(c.Title) + len(c.Metrics) + len(c.ExecutionStatus) +
		len(c.SecretsSealed) + len(v.SandboxStatus) + len(v.TaskStatus) + len(v.TaskDetail) + len(v.SandboxKeySealed) + 8*len(c.PRNumbers) + entryOverhead
	for _, p := range []*string{c.SelectedRepository, c.SelectedBranch, c.GitProvider, c.Trigger, c.LLMModel, c.ParentID} {
		if p != nil {
			n += len(*p)
		}
	}
	for _, name := range c.SecretNames {
		n += len(name)
	}
	for k, val := range c.Tags {
		n += len(k) + len(val)
	}
	return n
}

// get returns the entry of k if it holds the version (created, rev).
func (c *listingCache) get(k rowKey, created, rev int64) *cached {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	x := el.Value.(*cached)
	if x.created != created || x.rev != rev {
		return nil
	}
	c.order.MoveToFront(el)
	return x
}

// put keeps x in place of what its key held, and drops the least recently used entries beyond
// the budget. An entry larger than the whole budget is not kept.
func (c *listingCache) put(x *cached) {
	if c == nil || x.cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[x.key]; ok {
		c.remove(el)
	}
	c.byKey[x.key] = c.order.PushFront(x)
	c.size += x.cost
	for c.size > c.budget {
		c.remove(c.order.Back())
	}
}

func (c *listingCache) remove(el *list.Element) {
	x := c.order.Remove(el).(*cached)
	delete(c.byKey, x.key)
	c.size -= x.cost
}

// clear drops every entry, and the map's table with them: a cleared map keeps its table
// (a few hundred KiB after a burst of conversations).
func (c *listingCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey = map[rowKey]*list.Element{}
	c.order.Init()
	c.size = 0
}

// len is the number of entries.
func (c *listingCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// rowVersion is what a listing reads of a row first: its key (an event's Seq, or an id), the
// version of it (its creation time and rev; none for events, which never change), and its
// position in the listing's order (the value of the column it sorts by), from which the next
// page's cursor is made: the row read after may have changed since.
type rowVersion[K comparable] struct {
	key               K
	created, rev, pos int64
}

// scanRowVersion scans a row's id, creation time, rev and position.
func scanRowVersion(sc scanner) (rowVersion[string], error) {
	var v rowVersion[string]
	err := sc.Scan(&v.key, &v.created, &v.rev, &v.pos)
	return v, err
}

// scanCreatedVersion scans a row's id, creation time and rev, of a listing in order of
// creation: its position is its creation time. A column less to read is a tenth less of the
// listing's first read.
func scanCreatedVersion(sc scanner) (rowVersion[string], error) {
	var v rowVersion[string]
	err := sc.Scan(&v.key, &v.created, &v.rev)
	v.pos = v.created
	return v, err
}

// listPage is a listing of l's rows by versions: it reads the page's versions with query
// (without its LIMIT) and args, scanned by scan (scanRowVersion or scanCreatedVersion), then
// the rows at those versions (listed.at). The next page's cursor is made from the versions,
// where each row stood when the page was read.
func listPage[T any](ctx context.Context, s *Store, l listed[string, T], scan func(scanner) (rowVersion[string], error),
	query string, args []any, limit int) ([]T, string, error) {
	versions, err := pageVersions(ctx, s, scan, query, args, limit+1)
	if err != nil {
		return nil, "", err
	}
	versions, next := page(versions, limit, func(v rowVersion[string]) (int64, string) { return v.pos, v.key })
	rows, err := l.at(ctx, s, versions)
	if err != nil {
		return nil, "", err
	}
	return rows, next, nil
}

// pageVersions reads the versions of up to n rows with query (without its LIMIT) and args,
// or takes them from the cache when no commit came since they were read (dataVersion). When
// the data version is not looked at (Store.keptVersion), it reads them and keeps nothing.
// The versions returned may be shared with other callers, who only read them.
func pageVersions[K comparable](ctx context.Context, s *Store, scan func(scanner) (rowVersion[K], error), query string, args []any, n int) ([]rowVersion[K], error) {
	read := func() ([]rowVersion[K], error) {
		return collect(ctx, s.r, scan, query+` LIMIT ?`, append(args, n)...)
	}
	if s.listings == nil {
		return read()
	}
	version, ok := s.keptVersion(ctx)
	if !ok {
		return read()
	}
	key := rowKey{kind: kindPage, id: pageKey(query, args, n)}
	if x := s.listings.get(key, version, 0); x != nil {
		return x.row.([]rowVersion[K]), nil
	}
	versions, err := read()
	if err == nil {
		s.listings.put(&cached{key: key, cost: pageCost(key.id, versions), created: version, row: versions})
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

func pageCost[K comparable](key string, versions []rowVersion[K]) int {
	n := len(key) + entryOverhead
	for _, v := range versions {
		n += 40
		if k, ok := any(v.key).(string); ok {
			n += len(k)
		}
	}
	return n
}

// withRev turns a scan of a table's columns and those after them into extra (scanTaskWith,
// ...) into a scan of the columns and rev after them, as listed.scan is.
func withRev[T any](scan func(scanner, ...any) (T, error)) func(scanner) (T, int64, error) {
	return func(sc scanner) (T, int64, error) {
		var rev int64
		row, err := scan(sc, &rev)
		return row, rev, err
	}
}

// listed is a table whose listings read versions first (rowVersion): how its rows are kept
// in the cache, and how to read them whole.
type listed[K comparable, T any] struct {
	key func(T) K
	// ref names the row of a key in the cache; created is a row's creation time (0 for
	// events, which are not versioned).
	ref     func(K) rowKey
	created func(T) int64
	cost    func(*T) int
	// selectRows selects the table's columns (and rev, where it has one), without a WHERE;
	// scan scans them. keyColumn is the column of the key.
	selectRows, keyColumn string
	scan                  func(scanner) (T, int64, error)
}

// cached returns the row at version v, if the cache holds that version of it.
func (l listed[K, T]) cached(c *listingCache, v rowVersion[K]) (T, bool) {
	x := c.get(l.ref(v.key), v.created, v.rev)
	if x == nil {
		var zero T
		return zero, false
	}
	return x.row.(T), true
}

// keep keeps row, as read at rev, in place of any other version of it.
func (l listed[K, T]) keep(c *listingCache, row T, rev int64) {
	c.put(&cached{key: l.ref(l.key(row)), cost: l.cost(&row), created: l.created(row), rev: rev, row: row})
}

func byID(kind byte) func(string) rowKey {
	return func(id string) rowKey { return rowKey{kind: kind, id: id} }
}

// The cache shares the rows it keeps with their readers: nothing changes a stored event's
// body, a start task's request, a sandbox's sealed key or hash, or the slices, maps and
// pointers of a listed conversation in place (see event.Event, conversation.StartTask,
// sandbox.Sandbox and conversation.View).
var (
	listedEvents = listed[int64, event.Event]{
		key:     func(e event.Event) int64 { return e.Seq },
		ref:     func(seq int64) rowKey { return rowKey{kind: kindEvent, seq: seq} },
		created: func(event.Event) int64 { return 0 },
		cost:    eventCost,
		// One rowid lookup for each.
		selectRows: eventSelect, keyColumn: "e.seq",
		scan: func(sc scanner) (event.Event, int64, error) {
			e, err := scanEvent(sc)
			return e, 0, err
		},
	}
	listedTasks = listed[string, conversation.StartTask]{
		key:        func(t conversation.StartTask) string { return t.ID },
		ref:        byID(kindTask),
		created:    func(t conversation.StartTask) int64 { return nanos(t.CreatedAt) },
		cost:       taskCost,
		selectRows: `SELECT ` + taskColumns + `, rev FROM start_tasks`, keyColumn: "id", scan: withRev(scanTaskWith),
	}
	listedSandboxes = listed[string, sandbox.Sandbox]{
		key:        func(sb sandbox.Sandbox) string { return sb.ID },
		ref:        byID(kindSandbox),
		created:    func(sb sandbox.Sandbox) int64 { return nanos(sb.CreatedAt) },
		cost:       sandboxCost,
		selectRows: `SELECT ` + listedSandboxColumns + `, rev FROM sandboxes`, keyColumn: "id", scan: withRev(scanSandboxWith),
	}
	listedConversations = listed[string, conversation.View]{
		key:        func(v conversation.View) string { return v.ID },
		ref:        byID(kindConversation),
		created:    func(v conversation.View) int64 { return nanos(v.CreatedAt) },
		cost:       viewCost,
		selectRows: listSelect, keyColumn: "c.id", scan: withRev(scanViewWith),
	}
)

// at returns the rows at versions, in their order: from s's cache where it holds that
// version, and otherwise from the database, in one statement whatever their number (the keys
// are bound as one JSON array), into the cache. A row deleted since its version was read is
// left out; one updated since is returned as it is now.
func (l listed[K, T]) at(ctx context.Context, s *Store, versions []rowVersion[K]) ([]T, error) {
	rows := make([]T, len(versions))
	var missing []int // of versions
	for i, v := range versions {
		var ok bool
		if rows[i], ok = l.cached(s.listings, v); !ok {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return rows, nil
	}
	keys := make([]K, len(missing))
	for j, i := range missing {
		keys[j] = versions[i].key
	}
	list, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	type read struct {
		row T
		rev int64
	}
	fresh, err := collect(ctx, s.r, func(sc scanner) (read, error) {
		row, rev, err := l.scan(sc)
		return read{row, rev}, err
	}, l.selectRows+` WHERE `+l.keyColumn+` IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	byKey := make(map[K]T, len(fresh))
	for _, r := range fresh {
		byKey[l.key(r.row)] = r.row
		l.keep(s.listings, r.row, r.rev)
	}
	gone := make(map[int]bool)
	for _, i := range missing {
		var ok bool
		if rows[i], ok = byKey[versions[i].key]; !ok {
			gone[i] = true
		}
	}
	if len(gone) == 0 {
		return rows, nil
	}
	out := rows[:0]
	for i, row := range rows {
		if !gone[i] {
			out = append(out, row)
		}
	}
	return out, nil
}
