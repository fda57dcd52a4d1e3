package sqlite

import (
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// cursor is a decoded page position: the stored sort key (nanoseconds) and id of the last item
// of the previous page.
type cursor struct {
	key int64
	id  string
}

// decodeCursor decodes q.Cursor; nil means the first page. Errors wrap paging.ErrBadCursor.
func decodeCursor(s string) (*cursor, error) {
	c, err := paging.Decode(s)
	if err != nil || c == nil {
		return nil, err
	}
	return &cursor{key: c.Time.UnixNano(), id: c.ID}, nil
}

// encodeCursor encodes the position of an item whose stored sort key is key. The key travels as
// a time so that the zero time's key survives the round trip through paging.Encode.
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

// keyset adds to w the condition "(col, id) comes after c" in the listing's direction. The
// redundant bound on col alone lets SQLite seek in the (col, id) index.
func keyset(w *where, col, idCol string, desc bool, c *cursor) {
	if c == nil {
		return
	}
	op, opEq := ">", ">="
	if desc {
		op, opEq = "<", "<="
	}
	w.add(col+" "+opEq+" ? AND ("+col+" "+op+" ? OR "+idCol+" "+op+" ?)", c.key, c.key, c.id)
}

// order returns the ORDER BY clause for (col, id) in the listing's direction.
func order(col, idCol string, desc bool) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	return " ORDER BY " + col + dir + ", " + idCol + dir
}
