// Package listingcache keeps the rows that a store's listings read most recently, by their keys
// and versions, so that a page listed again is read from the database as its rows' keys and
// versions alone (from an index) rather than row by row with every column: reading and
// decoding the columns of a row costs many times what serving its bytes does, through
// database/sql and the transpiled SQLite as through pgx. Both stores keep one
// (internal/store/sqlite, internal/store/postgres); how each reads a page's versions, and when
// it may trust them, is its own.
//
// A version says which state of a row an entry holds, so that an entry is used only for the
// state the database has now:
//
//   - events, by Seq, have none. Events never change once stored and a Seq is never used
//     again, even after its event is deleted, so an entry is never stale: a deleted event is
//     only no longer listed, and its entry ages out.
//   - start tasks and sandboxes, by id, are kept with their creation time and rev, which the
//     database increments on every update of the row, whichever statement makes it (each
//     store's migrations say how). A row whose version differs is read again.
//   - conversations as listed (conversation.View), likewise by id and version. A
//     conversation's rev also counts the changes of its sandbox and latest start task that
//     the view shows.
//
// A store may keep other entries under its own kinds of keys (the SQLite store keeps pages). The
// readers of its listings may keep what they make of the rows listed in caches of their own,
// under the rows' keys and versions (the API keeps the conversations and start tasks it
// answered, encoded: internal/httpapi).
package listingcache

import (
	"container/list"
	"sync"
	"time"
	"unsafe"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// DefaultBytes is the budget of a store's cache when its options name none.
const DefaultBytes = 2 << 20

// Cache keeps entries up to a budget of bytes, the least recently used going first. Safe for
// concurrent use; a nil *Cache keeps nothing.
type Cache struct {
	mu     sync.Mutex
	budget int
	size   int
	byKey  map[Key]*list.Element // of *Entry
	order  list.List             // most recently used first
}

// Kind is a kind of entry.
type Kind byte

// Kinds of entries.
const (
	KindEvent Kind = iota
	KindTask
	KindSandbox
	KindConversation
	// KindPage is for a store's pages: what a listing's query read, by the query and its
	// arguments.
	KindPage
)

// Key names an entry: an event by its Seq, a start task, a sandbox or a conversation by its
// id; a page by a name of the store's making.
type Key struct {
	Kind Kind
	Seq  int64
	ID   string
}

// Entry is what the cache keeps under a key: a row as read (an event.Event, a
// conversation.StartTask, a sandbox.Sandbox, a conversation.View, or what a store keeps of a
// page), the version it was read at (0 for events), and what it costs of the budget.
type Entry struct {
	Key          Key
	Cost         int
	Created, Rev int64
	Row          any
}

// New returns a cache of budget bytes, or nil (no cache) when budget is not positive.
func New(budget int64) *Cache {
	if budget <= 0 {
		return nil
	}
	return &Cache{budget: int(budget), byKey: map[Key]*list.Element{}}
}

// Get returns the entry of k if it holds the version (created, rev).
func (c *Cache) Get(k Key, created, rev int64) *Entry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	x := el.Value.(*Entry)
	if x.Created != created || x.Rev != rev {
		return nil
	}
	c.order.MoveToFront(el)
	return x
}

// GetAll looks up n entries under one lock, as Get looks up each: at names the i-th entry and
// its version, and found receives each entry that c holds at that version.
func (c *Cache) GetAll(n int, at func(i int) (k Key, created, rev int64), found func(i int, x *Entry)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		k, created, rev := at(i)
		el, ok := c.byKey[k]
		if !ok {
			continue
		}
		x := el.Value.(*Entry)
		if x.Created != created || x.Rev != rev {
			continue
		}
		c.order.MoveToFront(el)
		found(i, x)
	}
}

// Put keeps x in place of what its key held, and drops the least recently used entries beyond
// the budget. An entry larger than the whole budget is not kept.
func (c *Cache) Put(x *Entry) {
	if c == nil || x.Cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[x.Key]; ok {
		c.remove(el)
	}
	c.byKey[x.Key] = c.order.PushFront(x)
	c.size += x.Cost
	for c.size > c.budget {
		c.remove(c.order.Back())
	}
}

func (c *Cache) remove(el *list.Element) {
	x := c.order.Remove(el).(*Entry)
	delete(c.byKey, x.Key)
	c.size -= x.Cost
}

// Clear drops every entry, and the map's table with them: a cleared map keeps its table
// (a few hundred KiB after a burst of conversations).
func (c *Cache) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey = map[Key]*list.Element{}
	c.order.Init()
	c.size = 0
}

// Len is the number of entries.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// The costs of entries are what they hold of the heap, about: the row's struct (boxed in
// the entry's interface), its strings and slices, and EntryOverhead.

// EntryOverhead is about what an entry, its list element and its map slot take of the heap
// besides its row.
const EntryOverhead = 200

// pointerOverhead and mapOverhead are what a pointer's target (besides its string) and a
// small map (besides its entries) take.
const (
	pointerOverhead = 16
	mapOverhead     = 300
)

func eventCost(e *event.Event) int {
	return int(unsafe.Sizeof(*e)) + len(e.ID) + len(e.ConversationID) + len(e.Kind) + len(e.Source) + len(e.Body) + len(e.LLMText) + EntryOverhead
}

func taskCost(t *conversation.StartTask) int {
	return int(unsafe.Sizeof(*t)) + len(t.ID) + len(t.OwnerID) + len(t.Detail) + len(t.ConversationID) + len(t.SandboxID) +
		len(t.AgentServerURL) + len(t.Request) + EntryOverhead
}

func sandboxCost(sb *sandbox.Sandbox) int {
	return int(unsafe.Sizeof(*sb)) + len(sb.ID) + len(sb.OwnerID) + len(sb.SpecID) + len(sb.Backend) + len(sb.Node) + len(sb.Status) +
		len(sb.Detail) + len(sb.SessionKeySealed) + len(sb.SessionKeyHash) + EntryOverhead
}

func viewCost(v *conversation.View) int {
	c := &v.Conversation
	n := int(unsafe.Sizeof(*v)) + len(c.ID) + len(c.OwnerID) + len(c.SandboxID) + len(c.Version) + len(c.Title) + len(c.Metrics) +
		len(c.ExecutionStatus) + len(c.WorkDir) + len(c.SecretsSealed) + len(v.SandboxStatus) + len(v.TaskStatus) + len(v.TaskDetail) +
		len(v.SandboxKeySealed) + 8*len(c.PRNumbers) + EntryOverhead
	for _, p := range []*string{c.SelectedRepository, c.SelectedBranch, c.GitProvider, c.Trigger, c.LLMModel, c.ParentID} {
		if p != nil {
			n += pointerOverhead + len(*p)
		}
	}
	if c.Public != nil {
		n += pointerOverhead
	}
	for _, name := range c.SecretNames {
		n += 16 + len(name)
	}
	if c.Tags != nil {
		n += mapOverhead
	}
	for k, val := range c.Tags {
		n += 32 + len(k) + len(val)
	}
	for _, id := range v.SubConversationIDs {
		n += 16 + len(id)
	}
	return n
}

// TimeKey is the version of a creation time: unix nanoseconds, the zero time the smallest
// int64 (as the SQLite store stores it).
func TimeKey(t time.Time) int64 {
	if t.IsZero() {
		return minInt64
	}
	return t.UnixNano()
}

const minInt64 = -1 << 63
