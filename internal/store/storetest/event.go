package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	c1 := newConversation(ownerA, "conv-1", 1)
	c2 := newConversation(ownerA, "conv-2", 2)
	createConversation(t, s, c1)
	createConversation(t, s, c2)

	ok(t, "append nothing", s.AppendEvents(ctx, nil))
	var appended []event.Event
	for _, batch := range [][]event.Event{
		{newEvent(c1.ID, "e1", 1), newEvent(c1.ID, "e2", 2), newEvent(c1.ID, "e3", 3)},
		{newEvent(c2.ID, "e4", 4)},
		{newEvent(c1.ID, "e5", 5), newEvent(c2.ID, "e6", 6)},
	} {
		ok(t, "append events", s.AppendEvents(ctx, batch))
		appended = append(appended, batch...)
	}
	for i, e := range appended {
		if e.Seq <= 0 || (i > 0 && e.Seq <= appended[i-1].Seq) {
			t.Fatalf("Seq of appended events not increasing from 1 in append order: %v",
				ids(appended, func(e event.Event) string { return fmt.Sprint(e.ID, "=", e.Seq) }))
		}
	}

	got, err := s.GetEvents(ctx, ownerA, []string{"e5", "missing", "e1", "e5"})
	ok(t, "get events", err)
	if len(got) != 4 || got[1] != nil {
		t.Fatalf("get events: %v, want 4 with a nil second", got)
	}
	equal(t, "got events", []event.Event{*got[0], *got[2], *got[3]}, []event.Event{appended[4], appended[0], appended[4]})
	got, err = s.GetEvents(ctx, ownerA, nil)
	ok(t, "get no events", err)
	if len(got) != 0 {
		t.Fatalf("get no events: %v", got)
	}

	is(t, "append to a missing conversation",
		s.AppendEvents(ctx, []event.Event{newEvent("conv-missing", "e-lost", 9)}), conversation.ErrNotFound)
	got, err = s.GetEvents(ctx, ownerA, []string{"e-lost"})
	ok(t, "get events", err)
	if got[0] != nil {
		t.Fatal("event appended to a missing conversation was stored")
	}
}

func testEventSearch(t *testing.T, s store.Store) {
	ctx := t.Context()
	c1 := newConversation(ownerA, "conv-1", 1)
	c2 := newConversation(ownerA, "conv-2", 2)
	createConversation(t, s, c1)
	createConversation(t, s, c2)
	var all []event.Event
	for i := range 20 {
		conv := c1.ID
		if i%3 == 0 {
			conv = c2.ID
		}
		// Timestamps do not follow Seq: the log's order is the order of appends.
		batch := []event.Event{newEvent(conv, fmt.Sprintf("e%02d", i), (i*7)%20)}
		ok(t, "append", s.AppendEvents(ctx, batch))
		all = append(all, batch...)
	}
	where := func(keep func(event.Event) bool) []event.Event {
		var out []event.Event
		for _, e := range all {
			if keep(e) {
				out = append(out, e)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    event.Filter
		want []event.Event
	}{
		{"everything", event.Filter{}, all},
		{"conversation", event.Filter{ConversationID: c1.ID}, where(func(e event.Event) bool { return e.ConversationID == c1.ID })},
		{"kind", event.Filter{Kind: "ActionEvent"}, where(func(e event.Event) bool { return e.Kind == "ActionEvent" })},
		{"timestamp gte", event.Filter{TimestampGTE: ptr(at(12))}, where(func(e event.Event) bool { return !e.Timestamp.Before(at(12)) })},
		{"timestamp lt", event.Filter{TimestampLT: ptr(at(12))}, where(func(e event.Event) bool { return e.Timestamp.Before(at(12)) })},
		{"all filters", event.Filter{ConversationID: c2.ID, Kind: "MessageEvent", TimestampGTE: ptr(at(2)), TimestampLT: ptr(at(19))},
			where(func(e event.Event) bool {
				return e.ConversationID == c2.ID && e.Kind == "MessageEvent" && !e.Timestamp.Before(at(2)) && e.Timestamp.Before(at(19))
			})},
		{"after an event", event.Filter{AfterSeq: all[6].Seq}, all[7:]},
		{"after an event, of a conversation", event.Filter{ConversationID: c1.ID, AfterSeq: all[6].Seq},
			where(func(e event.Event) bool { return e.ConversationID == c1.ID && e.Seq > all[6].Seq })},
		{"nothing", event.Filter{Kind: "NoSuchEvent"}, nil},
		{"nothing after the last", event.Filter{AfterSeq: all[len(all)-1].Seq}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.HasPrefix(tc.name, "nothing") && len(tc.want) == 0 {
				t.Fatal("bad test: expects no events")
			}
			for _, desc := range []bool{false, true} {
				want := slices.Clone(tc.want)
				if desc {
					slices.Reverse(want)
				}
				for _, limit := range []int{1, 3, 100} {
					got, pages := allPages(t, limit, func(q paging.Query) ([]event.Event, string, error) {
						return s.SearchEvents(ctx, ownerA, tc.f, desc, q)
					})
					equal(t, fmt.Sprintf("events (desc %v, limit %d)", desc, limit), got, want)
					if pages != pagesFor(len(want), limit) {
						t.Fatalf("desc %v, limit %d: %d pages, want %d", desc, limit, pages, pagesFor(len(want), limit))
					}
				}
			}
			n, err := s.CountEvents(ctx, ownerA, tc.f)
			ok(t, "count events", err)
			if n != len(tc.want) {
				t.Fatalf("count events: %d, want %d", n, len(tc.want))
			}
		})
	}

	_, _, err := s.SearchEvents(ctx, ownerA, event.Filter{}, false, paging.Query{Cursor: "not a cursor!"})
	is(t, "search with a bad cursor", err, paging.ErrBadCursor)
}

func testEventOwnership(t *testing.T, s store.Store) {
	ctx := t.Context()
	ca := newConversation(ownerA, "conv-a", 1)
	cb := newConversation(ownerB, "conv-b", 2)
	createConversation(t, s, ca)
	createConversation(t, s, cb)
	ok(t, "append", s.AppendEvents(ctx, []event.Event{newEvent(ca.ID, "ea1", 1), newEvent(cb.ID, "eb1", 2), newEvent(ca.ID, "ea2", 3)}))

	for _, tc := range []struct {
		f    event.Filter
		want []string
	}{
		{event.Filter{}, []string{"eb1"}},
		{event.Filter{ConversationID: ca.ID}, nil},
		{event.Filter{Kind: "ActionEvent"}, nil},
	} {
		evs, next, err := s.SearchEvents(ctx, ownerB, tc.f, false, paging.Query{})
		ok(t, "B searches", err)
		if got := ids(evs, eventID); !slices.Equal(got, tc.want) || next != "" {
			t.Fatalf("B searches %+v: %v (next %q), want %v", tc.f, got, next, tc.want)
		}
		n, err := s.CountEvents(ctx, ownerB, tc.f)
		ok(t, "B counts", err)
		if n != len(tc.want) {
			t.Fatalf("B counts %+v: %d, want %d", tc.f, n, len(tc.want))
		}
	}
	got, err := s.GetEvents(ctx, ownerB, []string{"ea1", "eb1", "ea2"})
	ok(t, "B gets events", err)
	if got[0] != nil || got[1] == nil || got[2] != nil {
		t.Fatalf("B gets %v, want only eb1", got)
	}
	evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{}, false, paging.Query{})
	ok(t, "A searches", err)
	equal(t, "events A finds", ids(evs, eventID), []string{"ea1", "ea2"})
}

func testAppendEventsAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-1", 1)
	createConversation(t, s, c)
	ok(t, "append", s.AppendEvents(ctx, []event.Event{newEvent(c.ID, "e-taken", 1)}))

	for name, batch := range map[string][]event.Event{
		"taken id":             {newEvent(c.ID, "e-new-1", 2), newEvent(c.ID, "e-taken", 3), newEvent(c.ID, "e-new-2", 4)},
		"id twice":             {newEvent(c.ID, "e-new-1", 2), newEvent(c.ID, "e-new-1", 3)},
		"missing conversation": {newEvent(c.ID, "e-new-1", 2), newEvent("conv-missing", "e-new-2", 3)},
	} {
		fails(t, "append a batch with a "+name, s.AppendEvents(ctx, batch))
		for _, e := range batch {
			if e.Seq != 0 {
				t.Fatalf("%s: failed append set Seq %d on %s", name, e.Seq, e.ID)
			}
		}
		n, err := s.CountEvents(ctx, ownerA, event.Filter{})
		ok(t, "count", err)
		if n != 1 {
			t.Fatalf("%s: %d events after a failed append, want 1", name, n)
		}
	}
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	ctx := t.Context()
	const (
		convs     = 3
		writers   = 6 // two per conversation
		batches   = 20
		batchSize = 3
	)
	for i := range convs {
		createConversation(t, s, newConversation(ownerA, fmt.Sprintf("conv-%d", i), i))
	}
	written := make([][]event.Event, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			conv := fmt.Sprintf("conv-%d", w%convs)
			for b := range batches {
				batch := make([]event.Event, batchSize)
				for i := range batch {
					batch[i] = newEvent(conv, fmt.Sprintf("w%d-b%02d-%d", w, b, i), b)
				}
				if err := s.AppendEvents(ctx, batch); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				written[w] = append(written[w], batch...)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	seqs := map[int64]string{}
	for w, evs := range written {
		for i, e := range evs {
			if other, dup := seqs[e.Seq]; dup {
				t.Fatalf("Seq %d given to %s and %s", e.Seq, other, e.ID)
			}
			seqs[e.Seq] = e.ID
			if i > 0 && e.Seq <= evs[i-1].Seq {
				t.Fatalf("writer %d: %s got Seq %d after %s got %d", w, e.ID, e.Seq, evs[i-1].ID, evs[i-1].Seq)
			}
		}
	}
	for i := range convs {
		conv := fmt.Sprintf("conv-%d", i)
		got, _ := allPages(t, 100, func(q paging.Query) ([]event.Event, string, error) {
			return s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: conv}, false, q)
		})
		var want []event.Event
		for w := i; w < writers; w += convs {
			want = append(want, written[w]...)
		}
		slices.SortFunc(want, func(a, b event.Event) int { return cmp.Compare(a.Seq, b.Seq) })
		if len(got) != batches*batchSize*writers/convs {
			t.Fatalf("%s: %d events stored, want %d", conv, len(got), batches*batchSize*writers/convs)
		}
		equal(t, conv+" log", got, want)
	}
}

func eventID(e event.Event) string { return e.ID }

// testEventBodySearch: the body filter matches the text of messages (content, extended
// content, reasoning) without regard to case, never other kinds, and pages like any filter.
func testEventBodySearch(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-1", 1)
	createConversation(t, s, c)
	message := func(id string, n int, body string) event.Event {
		e := newEvent(c.ID, id, n)
		e.Kind, e.Body = event.KindMessage, json.RawMessage(body)
		return e
	}
	evs := []event.Event{
		message("m1", 1, `{"llm_message": {"role": "user", "content": [{"type": "text", "text": "Please FIX the Build"}]}}`),
		message("m2", 2, `{"llm_message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}, "extended_content": [{"type": "text", "text": "fix notes"}]}`),
		message("m3", 3, `{"llm_message": {"role": "assistant", "content": [], "reasoning_content": "how to fix it"}}`),
		message("m4", 4, `{"llm_message": {"role": "user", "content": [{"type": "text", "text": "Straße ÉTÉ"}]}}`),
		{ID: "a5", ConversationID: c.ID, Kind: "ActionEvent", Source: event.SourceAgent, Timestamp: at(5),
			Body: json.RawMessage(`{"llm_message": {"content": [{"type": "text", "text": "fix"}]}, "thought": [{"type": "text", "text": "fix"}]}`)},
		message("m6", 6, `{"llm_message": {"role": "user", "content": [{"type": "image", "image_urls": ["https://fix.example/a.png"]}]}}`),
	}
	ok(t, "append", s.AppendEvents(ctx, evs))
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"fix", []string{"m1", "m2", "m3"}},
		{"FIX THE", []string{"m1"}},
		{"été", []string{"m4"}},
		{"done. fix", []string{"m2"}},
		{"absent", nil},
	} {
		f := event.Filter{ConversationID: c.ID, Body: tc.body}
		got, _ := allPages(t, 1, func(q paging.Query) ([]event.Event, string, error) {
			return s.SearchEvents(ctx, ownerA, f, false, q)
		})
		if got := ids(got, eventID); !slices.Equal(got, tc.want) {
			t.Fatalf("events with body %q: %v, want %v", tc.body, got, tc.want)
		}
		n, err := s.CountEvents(ctx, ownerA, f)
		ok(t, "count", err)
		if n != len(tc.want) {
			t.Fatalf("count with body %q: %d, want %d", tc.body, n, len(tc.want))
		}
	}
}
