package sqlite

import (
	"container/list"
	"sync"

	"github.com/agentd/agentd/internal/event"
)

// DefaultEventCacheBytes is the event cache of a Store whose Options name none.
const DefaultEventCacheBytes = 2 << 20

// eventCache keeps the most recently listed events by Seq, up to a budget of bytes, so that a
// page of events listed again is read from the database as its sequence numbers alone (one
// index walk) rather than row by row with every column: through database/sql and the
// transpiled SQLite, reading and copying the columns of a row costs many times what serving
// its bytes does. Events never change once stored and a Seq is never used again, even after
// its event is deleted, so an entry is never stale: a deleted event is only no longer listed,
// and its entry ages out. Safe for concurrent use; a nil *eventCache keeps nothing.
type eventCache struct {
	mu     sync.Mutex
	budget int
	size   int
	bySeq  map[int64]*list.Element // of *event.Event
	order  list.List               // most recently used first
}

// newEventCache returns a cache of budget bytes, or nil (no cache) when budget is not positive.
func newEventCache(budget int64) *eventCache {
	if budget <= 0 {
		return nil
	}
	return &eventCache{budget: int(budget), bySeq: map[int64]*list.Element{}}
}

// eventCost is what an entry counts against the budget: its strings and body, and about what
// the entry, its list element and its map slot take besides.
func eventCost(e *event.Event) int {
	return len(e.ID) + len(e.ConversationID) + len(e.Kind) + len(e.Source) + len(e.Body) + len(e.LLMText) + 200
}

// get returns the event at seq. Its Body is the cache's own: stored bodies are never changed
// (see event.Event), so it is shared rather than copied.
func (c *eventCache) get(seq int64) (event.Event, bool) {
	if c == nil {
		return event.Event{}, false
	}
	c.mu.Lock()
	el, ok := c.bySeq[seq]
	if !ok {
		c.mu.Unlock()
		return event.Event{}, false
	}
	c.order.MoveToFront(el)
	e := *el.Value.(*event.Event)
	c.mu.Unlock()
	return e, true
}

// put keeps e, which must be stored (its Seq set), and drops the least recently used entries
// beyond the budget. An event larger than the whole budget is not kept.
func (c *eventCache) put(e event.Event) {
	if c == nil || e.Seq == 0 {
		return
	}
	cost := eventCost(&e)
	if cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bySeq[e.Seq]; ok {
		return
	}
	c.bySeq[e.Seq] = c.order.PushFront(&e)
	c.size += cost
	for c.size > c.budget {
		last := c.order.Back()
		old := last.Value.(*event.Event)
		c.order.Remove(last)
		delete(c.bySeq, old.Seq)
		c.size -= eventCost(old)
	}
}

// clear drops every entry.
func (c *eventCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.bySeq)
	c.order.Init()
	c.size = 0
}

// len is the number of entries.
func (c *eventCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bySeq)
}
