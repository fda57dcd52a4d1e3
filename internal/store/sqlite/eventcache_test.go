package sqlite

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// rowReads counts the reads of whole event rows: the statements that select their bodies.
type rowReads struct {
	mu sync.Mutex
	n  int
}

func (r *rowReads) trace(q string, _ []driver.NamedValue) {
	if strings.Contains(q, "e.body") && strings.HasPrefix(strings.TrimSpace(q), "SELECT") {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}
}

func (r *rowReads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// appendNumbered appends n events with bodies of 100 bytes to conversation conv.
func appendNumbered(t *testing.T, s *Store, conv string, n int) []event.Event {
	t.Helper()
	evs := make([]event.Event, n)
	for i := range evs {
		id := fmt.Sprintf("%s-e%03d", conv, i)
		evs[i] = event.Event{ID: id, ConversationID: conv, Kind: "MessageEvent", Source: "agent",
			Body: fmt.Appendf(nil, `{"id":%q,"pad":%q}`, id, strings.Repeat("x", 100-len(id)-17))}
	}
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestListedEventsAreReadOnce: a page listed again is read as its sequence numbers alone, and
// what it returns is what the database holds.
func TestListedEventsAreReadOnce(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{}
	s, _ := storeWithConversations(t, Options{trace: reads.trace}, "c1")
	want := appendNumbered(t, s, "c1", 30)
	search := func(q paging.Query) ([]event.Event, string) {
		t.Helper()
		evs, next, err := s.SearchEvents(ctx, "u1", event.Filter{ConversationID: "c1"}, false, q)
		if err != nil {
			t.Fatal(err)
		}
		return evs, next
	}
	first, next := search(paging.Query{Limit: 10})
	if reads.count() != 1 {
		t.Fatalf("the first listing read rows %d times, want 1", reads.count())
	}
	for range 3 {
		again, againNext := search(paging.Query{Limit: 10})
		if !slices.EqualFunc(first, again, sameEvent) || againNext != next {
			t.Fatalf("listed again: %v, next %q; first: %v, next %q", again, againNext, first, next)
		}
	}
	if reads.count() != 1 {
		t.Fatalf("listing the page again read rows %d times in all, want 1", reads.count())
	}
	for i, e := range first {
		if e.Seq == 0 || e.ID != want[i].ID || string(e.Body) != string(want[i].Body) || e.Kind != "MessageEvent" || e.Source != "agent" || e.ConversationID != "c1" {
			t.Fatalf("event %d: %+v, want %+v", i, e, want[i])
		}
	}
	// A page that overlaps the first reads only the events it lacks.
	second, _ := search(paging.Query{Limit: 15})
	if reads.count() != 2 || len(second) != 15 || second[14].ID != want[14].ID {
		t.Fatalf("a longer page: %d events, rows read %d times in all, want 15 and 2", len(second), reads.count())
	}
	// The events of a deleted conversation are no longer listed.
	if err := s.DeleteConversation(ctx, "u1", "c1"); err != nil {
		t.Fatal(err)
	}
	if gone, next := search(paging.Query{Limit: 10}); len(gone) != 0 || next != "" {
		t.Fatalf("after the conversation's deletion: %d events, next %q", len(gone), next)
	}
	// ReleaseMemory empties the cache.
	if s.events.len() == 0 {
		t.Fatal("the cache is empty before ReleaseMemory")
	}
	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.events.len(); n != 0 {
		t.Fatalf("ReleaseMemory left %d events in the cache", n)
	}
}

func sameEvent(a, b event.Event) bool {
	return a.Seq == b.Seq && a.ID == b.ID && a.ConversationID == b.ConversationID && a.Kind == b.Kind &&
		a.Source == b.Source && a.Timestamp.Equal(b.Timestamp) && string(a.Body) == string(b.Body) && a.LLMText == b.LLMText
}

// TestEventCacheKeepsItsBudget: the least recently used events go first, the cache never
// holds more than its budget, and an event larger than it is not kept.
func TestEventCacheKeepsItsBudget(t *testing.T) {
	ev := func(seq int64, body int) event.Event {
		return event.Event{Seq: seq, ID: fmt.Sprint("e", seq), Body: []byte(strings.Repeat("b", body))}
	}
	one := eventCost(new(ev(1, 100)))
	c := newEventCache(int64(3 * one))
	for seq := int64(1); seq <= 3; seq++ {
		c.put(ev(seq, 100))
	}
	if _, ok := c.get(1); !ok { // 1 is now the most recently used
		t.Fatal("event 1 not kept")
	}
	c.put(ev(4, 100))
	if _, ok := c.get(2); ok {
		t.Fatal("event 2, the least recently used, was kept beyond the budget")
	}
	for _, seq := range []int64{1, 3, 4} {
		if _, ok := c.get(seq); !ok {
			t.Fatalf("event %d not kept", seq)
		}
	}
	if c.size > c.budget || c.len() != 3 {
		t.Fatalf("%d events of %d bytes in a budget of %d", c.len(), c.size, c.budget)
	}
	c.put(ev(5, 4*one))
	if _, ok := c.get(5); ok || c.len() != 3 {
		t.Fatalf("an event larger than the budget was kept (%d events)", c.len())
	}
	if newEventCache(0) != nil || newEventCache(-1) != nil {
		t.Fatal("a cache without a budget is not nil")
	}
	var off *eventCache
	off.put(ev(1, 1))
	if _, ok := off.get(1); ok || off.len() != 0 {
		t.Fatal("a nil cache kept an event")
	}
}

// TestEventCacheOff: with a negative budget every listing reads its rows.
func TestEventCacheOff(t *testing.T) {
	reads := &rowReads{}
	s, _ := storeWithConversations(t, Options{trace: reads.trace, EventCacheBytes: -1}, "c1")
	appendNumbered(t, s, "c1", 5)
	for range 2 {
		evs, _, err := s.SearchEvents(t.Context(), "u1", event.Filter{ConversationID: "c1"}, false, paging.Query{Limit: 10})
		if err != nil || len(evs) != 5 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
	}
	if s.events != nil || reads.count() != 2 {
		t.Fatalf("rows read %d times for 2 listings without a cache", reads.count())
	}
}
