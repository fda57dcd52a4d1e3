// Package paging holds the keyset cursor that every listing uses. A cursor names the last item
// of a page (its sort time and id), so items inserted or deleted between two requests never make
// a page repeat or skip an item that was there all along.
package paging

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Limits of a page, as in the OpenHands V1 API.
const (
	DefaultLimit = 100
	MaxLimit     = 100
)

// ErrBadCursor: a page_id that this server did not produce.
var ErrBadCursor = errors.New("invalid page_id")

// Query asks for one page. An empty Cursor asks for the first page.
type Query struct {
	Cursor string
	Limit  int
}

// Cursor is the decoded position after which the next page starts.
type Cursor struct {
	Time time.Time
	ID   string
}

// Encode returns the opaque page_id for the position of the item (t, id).
func Encode(t time.Time, id string) string {
	raw := strconv.FormatInt(t.UnixNano(), 10) + ":" + id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// Decode parses a page_id. An empty string decodes to nil (first page).
func Decode(s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	ns, id, ok := strings.Cut(string(raw), ":")
	if !ok || id == "" {
		return nil, ErrBadCursor
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return nil, ErrBadCursor
	}
	return &Cursor{Time: time.Unix(0, n).UTC(), ID: id}, nil
}

// Normalize applies the default limit and clamps it to [1, MaxLimit].
func (q Query) Normalize() Query {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit > MaxLimit {
		q.Limit = MaxLimit
	}
	return q
}

// Listed names a row of a listing (a conversation, a start task, a sandbox) at the version the
// listing read: its id, its creation time as unix nanoseconds (the least int64 for the zero
// time) and its rev, which counts the changes of what a listing shows of it. A row listed
// again at the same version holds what it held then.
type Listed struct {
	ID           string
	Created, Rev int64
}
