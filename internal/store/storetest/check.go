package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentd/agentd/internal/paging"
)

// The suite's one assertion style: values are compared through their canonical JSON (map keys
// sorted, embedded JSON re-encoded), which shows a readable difference and compares embedded
// JSON by meaning.

// canonical encodes v as JSON with every object's keys sorted.
func canonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	var generic any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&generic); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	b, err = json.Marshal(generic)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// equal fails the test unless got and want have the same canonical JSON.
func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	g, w := canonical(t, got), canonical(t, want)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// ok fails the test if err is not nil.
func ok(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// is fails the test unless errors.Is(err, target).
func is(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// fails fails the test if err is nil.
func fails(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want one", what)
	}
}

// allPages reads every page of a listing with the given limit. It checks that only the last
// page is short and has no next cursor, and returns the items and how many pages there were.
func allPages[T any](t *testing.T, limit int, list func(q paging.Query) ([]T, string, error)) ([]T, int) {
	t.Helper()
	var all []T
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 10_000 {
			t.Fatal("listing never ends")
		}
		items, next, err := list(paging.Query{Cursor: cursor, Limit: limit})
		ok(t, "list page", err)
		if len(items) > limit {
			t.Fatalf("page %d has %d items, limit is %d", pages, len(items), limit)
		}
		if next != "" && len(items) < limit {
			t.Fatalf("page %d has %d items and a next page, want %d", pages, len(items), limit)
		}
		all = append(all, items...)
		if next == "" {
			return all, pages
		}
		cursor = next
	}
}

// pagesFor is how many pages n items fill at limit per page: never an empty trailing page.
func pagesFor(n, limit int) int {
	if n == 0 {
		return 1
	}
	return (n + limit - 1) / limit
}
