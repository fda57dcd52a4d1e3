package sqlite

import (
	"container/list"
	"context"
	"encoding/json"
	"slices"
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
// holds three kinds of rows:
//
//   - events, by Seq. Events never change once stored and a Seq is never used again, even
//     after its event is deleted, so an entry is never stale: a deleted event is only no
//     longer listed, and its entry ages out.
//   - start tasks and sandboxes, by id, with the version they were read at: their creation
//     time and rev, which a trigger increments on every update of the row (migration 0012).
//     A row whose version differs is read again.
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
)

// rowKey names a cached row: an event by its Seq, a start task or a sandbox by its id.
type rowKey struct {
	kind byte
	seq  int64
	id   string
}

// cached is one entry: the row as read (an event.Event, a conversation.StartTask or a
// sandbox.Sandbox) and its version (0 for events).
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

// event returns the event at seq. Its Body is the cache's own: stored bodies are never changed
// (see event.Event), so it is shared rather than copied.
func (c *listingCache) event(seq int64) (event.Event, bool) {
	if x := c.get(rowKey{kind: kindEvent, seq: seq}, 0, 0); x != nil {
		return x.row.(event.Event), true
	}
	return event.Event{}, false
}

// putEvent keeps e, which must be stored (its Seq set).
func (c *listingCache) putEvent(e event.Event) {
	if e.Seq != 0 {
		c.put(&cached{key: rowKey{kind: kindEvent, seq: e.Seq}, cost: eventCost(&e), row: e})
	}
}

// task returns the start task id at the version (created, rev), if that is the one kept. Its
// Request is the cache's own, as a stored task's request is never changed.
func (c *listingCache) task(id string, created, rev int64) (conversation.StartTask, bool) {
	if x := c.get(rowKey{kind: kindTask, id: id}, created, rev); x != nil {
		return x.row.(conversation.StartTask), true
	}
	return conversation.StartTask{}, false
}

// putTask keeps t as read at rev, in place of any other version of it.
func (c *listingCache) putTask(t conversation.StartTask, rev int64) {
	c.put(&cached{key: rowKey{kind: kindTask, id: t.ID}, cost: taskCost(&t), created: nanos(t.CreatedAt), rev: rev, row: t})
}

// sandbox returns the sandbox id at the version (created, rev), if that is the one kept, with
// copies of its sealed key and hash.
func (c *listingCache) sandbox(id string, created, rev int64) (sandbox.Sandbox, bool) {
	x := c.get(rowKey{kind: kindSandbox, id: id}, created, rev)
	if x == nil {
		return sandbox.Sandbox{}, false
	}
	sb := x.row.(sandbox.Sandbox)
	sb.SessionKeySealed, sb.SessionKeyHash = slices.Clone(sb.SessionKeySealed), slices.Clone(sb.SessionKeyHash)
	return sb, true
}

// putSandbox keeps sb as read at rev, in place of any other version of it.
func (c *listingCache) putSandbox(sb sandbox.Sandbox, rev int64) {
	sb.SessionKeySealed, sb.SessionKeyHash = slices.Clone(sb.SessionKeySealed), slices.Clone(sb.SessionKeyHash)
	c.put(&cached{key: rowKey{kind: kindSandbox, id: sb.ID}, cost: sandboxCost(&sb), created: nanos(sb.CreatedAt), rev: rev, row: sb})
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

// clear drops every entry.
func (c *listingCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byKey)
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

func scanRowVersion(sc scanner) (rowVersion[string], error) {
	var v rowVersion[string]
	err := sc.Scan(&v.key, &v.created, &v.rev, &v.pos)
	return v, err
}

// pageVersions trims versions, read with limit+1, to one page and returns the next page's
// cursor, as page does.
func pageVersions(versions []rowVersion[string], limit int) ([]rowVersion[string], string) {
	return page(versions, limit, func(v rowVersion[string]) (int64, string) { return v.pos, v.key })
}

// listed is a table whose listings read versions first (rowVersion): how to find its rows in
// the cache, and how to read them whole.
type listed[K comparable, T any] struct {
	get func(c *listingCache, v rowVersion[K]) (T, bool)
	put func(c *listingCache, row T, rev int64)
	key func(T) K
	// selectRows selects the table's columns (and rev, where it has one), without a WHERE;
	// scan scans them. keyColumn is the column of the key.
	selectRows, keyColumn string
	scan                  func(scanner) (T, int64, error)
}

var (
	listedEvents = listed[int64, event.Event]{
		get: func(c *listingCache, v rowVersion[int64]) (event.Event, bool) { return c.event(v.key) },
		put: func(c *listingCache, e event.Event, _ int64) { c.putEvent(e) },
		key: func(e event.Event) int64 { return e.Seq },
		// One rowid lookup for each.
		selectRows: eventSelect, keyColumn: "e.seq",
		scan: func(sc scanner) (event.Event, int64, error) {
			e, err := scanEvent(sc)
			return e, 0, err
		},
	}
	listedTasks = listed[string, conversation.StartTask]{
		get: func(c *listingCache, v rowVersion[string]) (conversation.StartTask, bool) {
			return c.task(v.key, v.created, v.rev)
		},
		put:        (*listingCache).putTask,
		key:        func(t conversation.StartTask) string { return t.ID },
		selectRows: `SELECT ` + taskColumns + `, rev FROM start_tasks`, keyColumn: "id", scan: scanTaskRev,
	}
	listedSandboxes = listed[string, sandbox.Sandbox]{
		get: func(c *listingCache, v rowVersion[string]) (sandbox.Sandbox, bool) {
			return c.sandbox(v.key, v.created, v.rev)
		},
		put:        (*listingCache).putSandbox,
		key:        func(sb sandbox.Sandbox) string { return sb.ID },
		selectRows: `SELECT ` + listedSandboxColumns + `, rev FROM sandboxes`, keyColumn: "id", scan: scanSandboxRev,
	}
)

// at returns the rows at versions, in their order: from s's cache where it holds that
// version, and otherwise from the database, in one statement whatever their number (the keys
// are bound as one JSON array), into the cache. A row deleted since its version was read is
// left out; one updated since is returned as it is now.
func (l listed[K, T]) at(ctx context.Context, s *Store, versions []rowVersion[K]) ([]T, error) {
	rows := make([]T, len(versions))
	found := make([]bool, len(versions))
	var missing []K
	for i, v := range versions {
		if rows[i], found[i] = l.get(s.listings, v); !found[i] {
			missing = append(missing, v.key)
		}
	}
	if len(missing) > 0 {
		keys, err := json.Marshal(missing)
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
		}, l.selectRows+` WHERE `+l.keyColumn+` IN (SELECT value FROM json_each(?))`, string(keys))
		if err != nil {
			return nil, err
		}
		byKey := make(map[K]T, len(fresh))
		for _, r := range fresh {
			byKey[l.key(r.row)] = r.row
			l.put(s.listings, r.row, r.rev)
		}
		for i, v := range versions {
			if !found[i] {
				rows[i], found[i] = byKey[v.key]
			}
		}
	}
	out := rows[:0]
	for i, row := range rows {
		if found[i] {
			out = append(out, row)
		}
	}
	return out, nil
}
