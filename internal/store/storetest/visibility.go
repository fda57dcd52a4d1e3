package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// maxPolls bounds the reads of a reader that follows writers, far above what it needs.
const maxPolls = 1_000_000

// testEventsVisibleInOrder: while several writers append to one conversation (AppendEvents
// and RecordEvents), its events become visible in Seq order: a reader that sees an event sees
// every event before it. A reader that follows the log as feeds do (the events after the last
// it saw) then misses none, and every read of the whole log is a beginning of the final log.
// A store that numbers events when they are inserted but lets appends commit in another order
// fails this: a reader would see a gap that fills later.
func testEventsVisibleInOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-order", 1)
	createConversation(t, s, c)
	const writers, appends = 4, 40

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				evs := []event.Event{
					newEvent(c.ID, fmt.Sprintf("w%d-%02d-a", w, i), i),
					newEvent(c.ID, fmt.Sprintf("w%d-%02d-b", w, i), i),
				}
				var err error
				if i%2 == 0 {
					err = s.AppendEvents(ctx, evs)
				} else {
					_, err = s.RecordEvents(ctx, c.ID, evs, conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: at(i)})
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	written := make(chan struct{})
	go func() {
		wg.Wait()
		close(written)
	}()
	finished := func() bool {
		select {
		case <-written:
			return true
		default:
			return false
		}
	}

	// The follower reads the events after the last it saw until the writers are done and it
	// has read once more after that.
	var followed []event.Event
	var followErr error
	// The snapshot reader reads the whole log each time: how many events, and the last Seq.
	type snapshot struct {
		n    int
		last int64
	}
	var snapshots []snapshot
	var snapshotErr error
	var readers sync.WaitGroup
	readers.Go(func() {
		var last int64
		for polls := 0; ; polls++ {
			if polls == maxPolls {
				followErr = errors.New("the follower never caught up")
				return
			}
			done := finished()
			evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID, AfterSeq: last}, false, paging.Query{Limit: paging.MaxLimit})
			if err != nil {
				followErr = err
				return
			}
			followed = append(followed, evs...)
			if len(evs) > 0 {
				last = evs[len(evs)-1].Seq
			}
			if done && len(evs) < paging.MaxLimit {
				return
			}
		}
	})
	readers.Go(func() {
		for polls := 0; polls < maxPolls && !finished(); polls++ {
			evs, err := s.ConversationEvents(ctx, c.ID, 0)
			if err != nil {
				snapshotErr = err
				return
			}
			if len(evs) > 0 {
				snapshots = append(snapshots, snapshot{len(evs), evs[len(evs)-1].Seq})
			}
		}
	})
	readers.Wait()
	<-written
	if t.Failed() {
		return
	}
	ok(t, "follow the log", followErr)
	ok(t, "read the log", snapshotErr)

	final, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "read the final log", err)
	if len(final) != writers*appends*2 {
		t.Fatalf("%d events stored, want %d", len(final), writers*appends*2)
	}
	if !slices.IsSortedFunc(final, func(a, b event.Event) int { return cmp.Compare(a.Seq, b.Seq) }) {
		t.Fatal("the log is not in Seq order")
	}
	if got, want := ids(followed, eventID), ids(final, eventID); !slices.Equal(got, want) {
		missed := slices.DeleteFunc(slices.Clone(want), func(id string) bool { return slices.Contains(got, id) })
		t.Fatalf("the follower read %d events, the log has %d: it missed %v, which became visible behind events it had seen",
			len(got), len(want), missed)
	}
	for _, sn := range snapshots {
		if want := final[sn.n-1].Seq; sn.last != want {
			t.Fatalf("a read of the whole log had %d events ending at Seq %d, but the log's %dth event is Seq %d: an earlier event was not visible yet",
				sn.n, sn.last, sn.n, want)
		}
	}
	t.Logf("%d reads of the whole log, %d events followed", len(snapshots), len(followed))
}

// testDeleteWhileAppending: a conversation deleted while writers append to it leaves no event
// behind; each append either went before the delete (and went with it) or fails with
// conversation.ErrNotFound.
func testDeleteWhileAppending(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-doomed", 1)
	createConversation(t, s, c)
	keep := newConversation(ownerA, "conv-kept", 2)
	createConversation(t, s, keep)
	const writers, appends = 3, 30
	var wg sync.WaitGroup
	started := make(chan struct{}, writers)
	var mu sync.Mutex
	var attempted []string
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				evs := []event.Event{newEvent(c.ID, fmt.Sprintf("w%d-%02d", w, i), i), newEvent(keep.ID, fmt.Sprintf("keep-w%d-%02d", w, i), i)}
				mu.Lock()
				attempted = append(attempted, evs[0].ID)
				mu.Unlock()
				var err error
				if w == 0 {
					_, err = s.RecordEvents(ctx, c.ID, evs[:1], conversation.StateUpdate{UpdatedAt: at(i)})
				} else {
					err = s.AppendEvents(ctx, evs)
				}
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, conversation.ErrNotFound) {
					return
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	<-started
	ok(t, "delete the conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	wg.Wait()
	if t.Failed() {
		return
	}
	n, err := s.CountEvents(ctx, ownerA, event.Filter{ConversationID: c.ID})
	ok(t, "count the deleted conversation's events", err)
	if n != 0 {
		t.Fatalf("%d events of the deleted conversation are left", n)
	}
	got, err := s.GetEvents(ctx, ownerA, attempted)
	ok(t, "get the events appended to it", err)
	for i, e := range got {
		if e != nil {
			t.Fatalf("event %s of the deleted conversation is left", attempted[i])
		}
	}
	_, err = s.GetConversation(ctx, ownerA, keep.ID)
	ok(t, "the other conversation is there", err)
}
