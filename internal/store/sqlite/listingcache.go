package sqlite

import (
	"container/list"
	"sync"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// DefaultListingCacheBytes is the listing cache of a Store whose Options name none.
const DefaultListingCacheBytes = 2 << 20

// listingCache keeps the rows listed most recently, up to a budget of bytes, so that a page
// listed again is read from the database as its rows' keys and versions alone (mostly from an
// index) rather than row by row with every column: through database/sql and the transpiled
// SQLite, reading and copying the columns of a row costs many times what serving its bytes
// does. It holds two kinds of rows:
//
//   - events, by Seq. Events never change once stored and a Seq is never used again, even
//     after its event is deleted, so an entry is never stale: a deleted event is only no
//     longer listed, and its entry ages out.
//   - start tasks, by id, with the version they were read at: their creation time and rev,
//     which every update of a task increments. A task whose version differs is read again.
//
// Safe for concurrent use; a nil *listingCache keeps nothing.
type listingCache struct {
	mu     sync.Mutex
	budget int
	size   int
	byKey  map[rowKey]*list.Element // of *cached
	order  list.List                // most recently used first
}

// rowKey names a cached row: an event's Seq, or a start task's id.
type rowKey struct {
	seq    int64
	taskID string
}

// cached is one entry: an event, or a start task and its version.
type cached struct {
	key  rowKey
	cost int
	ev   event.Event
	task cachedTask
}

// cachedTask is a start task as read, with its version.
type cachedTask struct {
	t            conversation.StartTask
	created, rev int64
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

// event returns the event at seq. Its Body is the cache's own: stored bodies are never changed
// (see event.Event), so it is shared rather than copied.
func (c *listingCache) event(seq int64) (event.Event, bool) {
	if x := c.get(rowKey{seq: seq}); x != nil {
		return x.ev, true
	}
	return event.Event{}, false
}

// putEvent keeps e, which must be stored (its Seq set).
func (c *listingCache) putEvent(e event.Event) {
	if e.Seq != 0 {
		c.put(&cached{key: rowKey{seq: e.Seq}, cost: eventCost(&e), ev: e})
	}
}

// task returns the start task id at the version (created, rev), if it is the one kept. Its
// Request is the cache's own, as a stored task's request is never changed.
func (c *listingCache) task(id string, created, rev int64) (conversation.StartTask, bool) {
	if x := c.get(rowKey{taskID: id}); x != nil && x.task.created == created && x.task.rev == rev {
		return x.task.t, true
	}
	return conversation.StartTask{}, false
}

// putTask keeps t as read at rev, in place of any other version of it.
func (c *listingCache) putTask(t conversation.StartTask, rev int64) {
	c.put(&cached{key: rowKey{taskID: t.ID}, cost: taskCost(&t), task: cachedTask{t: t, created: nanos(t.CreatedAt), rev: rev}})
}

func (c *listingCache) get(k rowKey) *cached {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached)
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
