package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// A feed (event.Follow) replays the store and goes on with the bus; its guarantee (every
// event once, in log order, no gap between the two) holds only if the store numbers a
// conversation's events in the order their appends commit and reads by that number. These
// tests check it on each store, with the real bus.

// logReader reads conv's stored events after a Seq, as the conversation service's feeds do.
func logReader(s store.Store, conv string) event.Reader {
	return func(ctx context.Context, afterSeq int64, limit int) ([]event.Event, error) {
		evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: conv, AfterSeq: afterSeq}, false, paging.Query{Limit: limit})
		return evs, err
	}
}

// record stores evs through the bus, as every writer of the service does.
func record(t *testing.T, s store.Store, bus event.Bus, evs ...event.Event) {
	t.Helper()
	if err := bus.Record(evs[0].ConversationID, func() error { return s.AppendEvents(t.Context(), evs) }, evs); err != nil {
		t.Errorf("record %s: %v", evs[0].ID, err)
	}
}

// feedWait bounds how long readFeed waits for the next event: generous, for a busy machine,
// but a feed that misses an event fails the test instead of hanging it.
const feedWait = time.Minute

// errFeedStalled: readFeed waited feedWait for an event that did not come.
var errFeedStalled = errors.New("no event came for a minute")

// readFeed reads f until it has the event last (returning what it read), or until it ends.
func readFeed(f *event.Feed, last string) (got []string, err error) {
	for {
		select {
		case e, ok := <-f.C:
			if !ok {
				return got, f.Err()
			}
			got = append(got, e.ID)
			if e.ID == last {
				return got, nil
			}
		case <-time.After(feedWait):
			return got, errFeedStalled
		}
	}
}

// testFeed: feeds opened at every point of a log that several writers append to while they
// open, from the start or after a given event, each deliver exactly the log's events after
// their start, in the log's order.
func testFeed(t *testing.T, s store.Store, b Buses) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-feed", 1)
	createConversation(t, s, c)
	other := newConversation(ownerA, "conv-other", 2)
	createConversation(t, s, other)

	const writers, perWriter, feeds = 4, 30, 12
	// Half the log is there before the first feed opens; the rest is written while they open.
	for i := range perWriter {
		record(t, s, b.Writer, newEvent(c.ID, fmt.Sprintf("before-%02d", i), i))
	}
	type opened struct {
		f     *event.Feed
		after int64
	}
	var (
		mu    sync.Mutex
		open  []opened
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range perWriter {
				// A batch of two, and an event of another conversation between batches.
				record(t, s, b.Writer, newEvent(c.ID, fmt.Sprintf("w%d-%02d-a", w, i), i), newEvent(c.ID, fmt.Sprintf("w%d-%02d-b", w, i), i))
				record(t, s, b.Writer, newEvent(other.ID, fmt.Sprintf("other-w%d-%02d", w, i), i))
			}
		})
	}
	wg.Go(func() {
		<-start
		for i := range feeds {
			o := event.FeedOptions{Read: logReader(b.ReaderStore, c.ID), Buffer: 4 * writers * perWriter}
			if i%2 == 1 {
				// After the last event stored now.
				evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID}, true, paging.Query{Limit: 1})
				if err != nil || len(evs) != 1 {
					t.Errorf("last event: %v %v", evs, err)
					return
				}
				o.AfterSeq = evs[0].Seq
			}
			f := event.Follow(ctx, b.Reader, c.ID, o)
			mu.Lock()
			open = append(open, opened{f, o.AfterSeq})
			mu.Unlock()
		}
	})
	close(start)
	wg.Wait()
	record(t, s, b.Writer, newEvent(c.ID, "last", 99))
	if t.Failed() {
		return
	}

	all, _ := allPages(t, 100, func(q paging.Query) ([]event.Event, string, error) {
		return s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID}, false, q)
	})
	if len(all) != perWriter+2*writers*perWriter+1 {
		t.Fatalf("%d events stored, want %d", len(all), perWriter+2*writers*perWriter+1)
	}
	for i, o := range open {
		var want []string
		for _, e := range all {
			if e.Seq > o.after {
				want = append(want, e.ID)
			}
		}
		got, err := readFeed(o.f, "last")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("feed %d (after seq %d): %v\n%d events, want %d:\n got %v\nwant %v", i, o.after, err, len(got), len(want), got, want)
		}
		o.f.Close()
		if err := o.f.Err(); !errors.Is(err, event.ErrClosed) {
			t.Fatalf("feed %d closed: %v, want ErrClosed", i, err)
		}
	}
	if n := b.Reader.Subscribers(c.ID); n != 0 {
		t.Fatalf("%d subscriptions left after every feed closed", n)
	}
}

// testFeedLagged: a reader that stops reading never holds up the writers; its feed ends with
// ErrLagged after what its buffer held, and a feed opened after the last event it got
// delivers the rest, nothing twice.
func testFeedLagged(t *testing.T, s store.Store, b Buses) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-lag", 1)
	createConversation(t, s, c)
	record(t, s, b.Writer, newEvent(c.ID, "e-000", 0))
	const buffer, events = 3, 40
	stalled := event.Follow(ctx, b.Reader, c.ID, event.FeedOptions{Read: logReader(b.ReaderStore, c.ID), Buffer: buffer})
	// Once the first event is there, the feed has read the log: the events recorded next reach
	// it through the bus only, and it falls behind. (A feed whose replay read them from the
	// log would deliver them as its reader reads, which is no lag.)
	got, err := readFeed(stalled, "e-000")
	if err != nil || !slices.Equal(got, []string{"e-000"}) {
		t.Fatalf("the stalled feed's first event: %v, %v", got, err)
	}
	keeping := event.Follow(ctx, b.Reader, c.ID, event.FeedOptions{Read: logReader(b.ReaderStore, c.ID), Buffer: events})
	// Every record returns whatever the stalled reader does.
	for i := 1; i < events; i++ {
		record(t, s, b.Writer, newEvent(c.ID, fmt.Sprintf("e-%03d", i), i))
	}
	var want []string
	for i := range events {
		want = append(want, fmt.Sprintf("e-%03d", i))
	}
	if got, err := readFeed(keeping, want[events-1]); err != nil || !slices.Equal(got, want) {
		t.Fatalf("the reader that keeps up: %v, %v", got, err)
	}
	keeping.Close()

	rest, err := readFeed(stalled, "") // to its end
	got = append(got, rest...)
	if !errors.Is(err, event.ErrLagged) {
		t.Fatalf("stalled feed ended with %v after %v, want ErrLagged", err, got)
	}
	if len(got) == 0 || len(got) > events || !slices.Equal(got, want[:len(got)]) {
		t.Fatalf("stalled feed delivered %v before it ended; want a beginning of the log", got)
	}
	stored, err := logReader(s, c.ID)(ctx, 0, events)
	if err != nil {
		t.Fatal(err)
	}
	last := stored[len(got)-1].Seq // got is a beginning of the log
	resumed := event.Follow(ctx, b.Reader, c.ID, event.FeedOptions{Read: logReader(b.ReaderStore, c.ID), AfterSeq: last, Buffer: buffer})
	defer resumed.Close()
	record(t, s, b.Writer, newEvent(c.ID, "after the lag", events))
	want = append(want, "after the lag")
	rest, err = readFeed(resumed, "after the lag")
	if err != nil || !slices.Equal(append(got, rest...), want) {
		t.Fatalf("resumed after %s: %v (%v); with the first part %v, want %v", got[len(got)-1], rest, err, append(got, rest...), want)
	}
}

// testFeedEnds: a feed delivers transient events live, ends with ErrEnded when its
// conversation ends, and with its context's error.
func testFeedEnds(t *testing.T, s store.Store, b Buses) {
	c := newConversation(ownerA, "conv-end", 1)
	createConversation(t, s, c)
	record(t, s, b.Writer, newEvent(c.ID, "stored", 1))

	ctx, cancel := context.WithCancel(t.Context())
	live := event.Follow(ctx, b.Reader, c.ID, event.FeedOptions{Buffer: 10}) // live only
	f := event.Follow(t.Context(), b.Reader, c.ID, event.FeedOptions{Read: logReader(b.ReaderStore, c.ID), Buffer: 10})
	if got, err := readFeed(f, "stored"); err != nil || !slices.Equal(got, []string{"stored"}) {
		t.Fatalf("replay: %v %v", got, err)
	}
	progress := event.Event{ID: "progress", ConversationID: c.ID, Kind: event.KindStateUpdate}
	b.Writer.Publish(progress) // transient: Seq 0
	record(t, s, b.Writer, newEvent(c.ID, "after", 2))
	if got, err := readFeed(f, "after"); err != nil || !slices.Equal(got, []string{"progress", "after"}) {
		t.Fatalf("live: %v %v, want the transient event, then the stored one", got, err)
	}
	if got, err := readFeed(live, "after"); err != nil || !slices.Equal(got, []string{"progress", "after"}) {
		t.Fatalf("live only: %v %v", got, err)
	}
	b.Writer.End(c.ID)
	if got, err := readFeed(f, ""); len(got) != 0 || !errors.Is(err, event.ErrEnded) {
		t.Fatalf("after the end: %v, %v; want ErrEnded", got, err)
	}
	f.Close() // after the end: still safe

	again := event.Follow(ctx, b.Reader, c.ID, event.FeedOptions{Buffer: 10})
	cancel()
	if got, err := readFeed(again, ""); len(got) != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("after its context ended: %v, %v", got, err)
	}
	live.Close()
	again.Close()
}
