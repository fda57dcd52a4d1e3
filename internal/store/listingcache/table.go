package listingcache

import (
	"slices"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// Version is what a listing reads of a row first: its key (an event's Seq, or an id), the
// version of it (its creation time as TimeKey and rev; none for events, which never change),
// and its position in the listing's order (the value of the column it sorts by, in the
// store's page cursors' terms), from which the next page's cursor is made: the row read after
// may have changed since.
type Version[K comparable] struct {
	Key               K
	Created, Rev, Pos int64
}

// Read is a row as a store read it, with its rev (0 for events).
type Read[T any] struct {
	Row T
	Rev int64
}

// Table is a kind of row that listings read by versions: how its rows are kept in a Cache.
type Table[K comparable, T any] struct {
	key func(T) K
	ref func(K) Key
	// created is a row's creation time as TimeKey (0 for events, which are not versioned).
	created func(T) int64
	cost    func(*T) int
	// owner is a row's owner's id, and rev the rev it was read at (nil for events, which are
	// read by conversation and never change).
	owner func(*T) string
	rev   func(*T) int64
}

func byID(kind Kind) func(string) Key {
	return func(id string) Key { return Key{Kind: kind, ID: id} }
}

// The cache shares the rows it keeps with their readers: nothing changes a stored event's
// body, a start task's request, a sandbox's sealed key or hash, or the slices, maps and
// pointers of a listed conversation in place (see event.Event, conversation.StartTask,
// sandbox.Sandbox and conversation.View).
var (
	Events = Table[int64, event.Event]{
		key:     func(e event.Event) int64 { return e.Seq },
		ref:     func(seq int64) Key { return Key{Kind: KindEvent, Seq: seq} },
		created: func(event.Event) int64 { return 0 },
		cost:    eventCost,
	}
	Tasks = Table[string, conversation.StartTask]{
		key:     func(t conversation.StartTask) string { return t.ID },
		ref:     byID(KindTask),
		created: func(t conversation.StartTask) int64 { return TimeKey(t.CreatedAt) },
		cost:    taskCost,
		owner:   func(t *conversation.StartTask) string { return t.OwnerID },
		rev:     func(t *conversation.StartTask) int64 { return t.Rev },
	}
	Sandboxes = Table[string, sandbox.Sandbox]{
		key:     func(sb sandbox.Sandbox) string { return sb.ID },
		ref:     byID(KindSandbox),
		created: func(sb sandbox.Sandbox) int64 { return TimeKey(sb.CreatedAt) },
		cost:    sandboxCost,
		owner:   func(sb *sandbox.Sandbox) string { return sb.OwnerID },
		rev:     func(sb *sandbox.Sandbox) int64 { return sb.Rev },
	}
	Conversations = Table[string, conversation.View]{
		key:     func(v conversation.View) string { return v.ID },
		ref:     byID(KindConversation),
		created: func(v conversation.View) int64 { return TimeKey(v.CreatedAt) },
		cost:    viewCost,
		owner:   func(v *conversation.View) string { return v.OwnerID },
		rev:     func(v *conversation.View) int64 { return v.Rev },
	}
)

// Cached returns the row at version v, if c holds that version of it.
func (l Table[K, T]) Cached(c *Cache, v Version[K]) (T, bool) {
	x := c.Get(l.ref(v.Key), v.Created, v.Rev)
	if x == nil {
		var zero T
		return zero, false
	}
	return x.Row.(T), true
}

// Keep keeps row, as read at rev, in place of any other version of it.
func (l Table[K, T]) Keep(c *Cache, row T, rev int64) {
	c.Put(&Entry{Key: l.ref(l.key(row)), Cost: l.cost(&row), Created: l.created(row), Rev: rev, Row: row})
}

// Cost is what row costs of a cache's budget.
func (l Table[K, T]) Cost(row *T) int { return l.cost(row) }

// At returns the rows at versions, in their order: from c where it holds that version, and
// the others as read reads them (the keys of the rows c lacks, in the versions' order; read
// is not called when c holds them all), which c then keeps. A row that read does not return
// (deleted since its version was read) is left out; one updated since is returned as read
// returns it.
func (l Table[K, T]) At(c *Cache, versions []Version[K], read func(keys []K) ([]Read[T], error)) ([]T, error) {
	rows := make([]T, len(versions))
	held := make([]bool, len(versions))
	n := 0
	// Under one lock for the page: the concurrent listings of a busy server would otherwise
	// take turns at it a hundred times each.
	c.GetAll(len(versions), func(i int) (Key, int64, int64) {
		v := versions[i]
		return l.ref(v.Key), v.Created, v.Rev
	}, func(i int, x *Entry) {
		rows[i], held[i] = x.Row.(T), true
		n++
	})
	if n == len(versions) {
		return rows, nil
	}
	missing := make([]int, 0, len(versions)-n) // of versions
	for i := range versions {
		if !held[i] {
			missing = append(missing, i)
		}
	}
	keys := make([]K, len(missing))
	for j, i := range missing {
		keys[j] = versions[i].Key
	}
	fresh, err := read(keys)
	if err != nil {
		return nil, err
	}
	byKey := make(map[K]T, len(fresh))
	for _, r := range fresh {
		byKey[l.key(r.Row)] = r.Row
		l.Keep(c, r.Row, r.Rev)
	}
	gone := make(map[int]bool)
	for _, i := range missing {
		var ok bool
		if rows[i], ok = byKey[versions[i].Key]; !ok {
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

// Owned leaves out of rows, in place, those another owner than ownerID has.
func (l Table[K, T]) Owned(rows []T, ownerID string) []T {
	return slices.DeleteFunc(rows, func(row T) bool { return l.owner(&row) != ownerID })
}

// Listed names the rows at versions as paging.Listed does; Versions is the reverse, the
// rows' positions left out (a row is read at a version by its key and version alone).
func Listed(versions []Version[string]) []paging.Listed {
	ls := make([]paging.Listed, len(versions))
	for i, v := range versions {
		ls[i] = paging.Listed{ID: v.Key, Created: v.Created, Rev: v.Rev}
	}
	return ls
}

// ListedRow names row, a start task, a sandbox or a conversation of table l, as paging.Listed
// does, at the version it was read at.
func ListedRow[T any](l Table[string, T], row *T) paging.Listed {
	return paging.Listed{ID: l.key(*row), Created: l.created(*row), Rev: l.rev(row)}
}

func Versions(ls []paging.Listed) []Version[string] {
	versions := make([]Version[string], len(ls))
	for i, l := range ls {
		versions[i] = Version[string]{Key: l.ID, Created: l.Created, Rev: l.Rev}
	}
	return versions
}

// Rows is a Table as a store reads it whole from its database, whose rows scan from S (the
// store's kind of row: database/sql's, pgx's).
type Rows[K comparable, T, S any] struct {
	Table[K, T]
	// Select selects the table's columns (and rev, where it has one), without a WHERE; Scan
	// scans them. KeyColumn is the column of the key.
	Select, KeyColumn string
	Scan              func(S) (Read[T], error)
}

// ScanSandbox turns a store's scan of a sandbox's listed columns and those after them into
// extra into a scan of the columns and rev after them, as Rows.Scan is, the rev read into
// Sandbox.Rev too.
func ScanSandbox[S any](scan func(S, ...any) (sandbox.Sandbox, error)) func(S) (Read[sandbox.Sandbox], error) {
	return func(row S) (Read[sandbox.Sandbox], error) {
		var rev int64
		sb, err := scan(row, &rev)
		sb.Rev = rev
		return Read[sandbox.Sandbox]{Row: sb, Rev: rev}, err
	}
}

// ScanTask and ScanView turn a store's scan of a start task or a conversation view, which
// reads the row's rev into it (StartTask.Rev, View.Rev), into a scan as Rows.Scan is.
func ScanTask[S any](scan func(S) (conversation.StartTask, error)) func(S) (Read[conversation.StartTask], error) {
	return withRowRev(scan, Tasks.rev)
}

func ScanView[S any](scan func(S) (conversation.View, error)) func(S) (Read[conversation.View], error) {
	return withRowRev(scan, Conversations.rev)
}

func withRowRev[S, T any](scan func(S) (T, error), rev func(*T) int64) func(S) (Read[T], error) {
	return func(row S) (Read[T], error) {
		r, err := scan(row)
		return Read[T]{Row: r, Rev: rev(&r)}, err
	}
}
