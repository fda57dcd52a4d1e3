package postgres

import (
	"math"
	"strconv"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Page cursors are those of the SQLite store: the sort key of the last item of a page as
// unix nanoseconds (the zero time as the smallest int64; an event's Seq as it is) and its
// id, in paging's encoding. A cursor of one store is thus a cursor of the other.

// cursor is a decoded page position.
type cursor struct {
	key int64
	id  string
}

// time is the cursor's key as a time, for listings sorted by a time column.
func (c *cursor) time() time.Time {
	if c.key == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, c.key).UTC()
}

// decodeCursor decodes q.Cursor; nil means the first page. Errors wrap paging.ErrBadCursor.
func decodeCursor(s string) (*cursor, error) {
	c, err := paging.Decode(s)
	if err != nil || c == nil {
		return nil, err
	}
	return &cursor{key: c.Time.UnixNano(), id: c.ID}, nil
}

// timeKey is the cursor key of a stored time.
func timeKey(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// encodeCursor encodes the position of an item whose sort key is key. The key travels as a
// time so that the zero time's key survives the round trip through paging.Encode.
func encodeCursor(key int64, id string) string {
	return paging.Encode(time.Unix(0, key), id)
}

// page trims rows, fetched with limit+1, to one page and returns the cursor of the next page,
// or "" when rows held no more than limit items.
func page[T any](rows []T, limit int, pos func(T) (int64, string)) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, encodeCursor(pos(rows[limit-1]))
}

// keyset adds to w the condition "(col, id) comes after c" in the listing's direction, as
// a row comparison, which PostgreSQL reads as a range of a (col, id) index.
func keyset(w *where, col, idCol string, desc bool, c *cursor) {
	if c == nil {
		return
	}
	op := ">"
	if desc {
		op = "<"
	}
	w.add("(" + col + ", " + idCol + ") " + op + " (" + w.arg(c.time()) + ", " + w.arg(c.id) + ")")
}

// order returns the ORDER BY clause for (col, id) in the listing's direction.
func order(col, idCol string, desc bool) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	return " ORDER BY " + col + dir + ", " + idCol + dir
}

// limit returns the LIMIT clause of a page of n rows, n written into the statement rather
// than bound as an argument. PostgreSQL plans a prepared statement once for any arguments
// (its generic plan) only when that plan looks no costlier than the plans for the arguments
// of its first five executions; it estimates an unknown LIMIT as a tenth of the rows, so over
// a large table the generic plan of a page looked thousands of times costlier, and every
// listing was planned again (a custom plan; seen with 100,000 conversations of one owner).
// With n written in, the generic plan is the page's. A page has at most paging.MaxLimit + 1
// rows, so a connection prepares a listing's statement for a few sizes of page at most.
func limit(n int) string { return " LIMIT " + strconv.Itoa(n) }
