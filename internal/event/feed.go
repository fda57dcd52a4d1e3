package event

import (
	"context"
	"errors"
	"fmt"
)

// A feed is the one way to follow a conversation's log: the WebSocket, the SSE stream and
// every later reader use it. It replays what the store holds after a point, then goes on with
// the live events, and delivers each event of the log once, in log (Seq) order, with no gap
// between the two parts:
//
//   - It subscribes to the bus before it reads the store. An event committed before the
//     subscription is in the store when it reads; one committed after is published after the
//     subscription (Record publishes only what is committed), so it reaches the subscription.
//   - Record publishes a conversation's events in Seq order, so the live part comes in order;
//     an event both read and published is recognised by its Seq (not greater than the last
//     one delivered) and skipped.
//   - The point to start after is a Seq, which the store keeps with the event: a reader that
//     remembers the last event it got resumes after it, also from another process after a
//     restart, and loses and repeats nothing.
//
// A reader slower than the live events gets the events its buffer holds, then the feed ends
// with ErrLagged: the writers never wait for a reader. Nothing is lost: the reader follows
// again after the last event it got.

// Why a feed ends, beside its context's error and the store's.
var (
	// ErrLagged: the reader fell further behind the live events than its buffer holds.
	ErrLagged = errors.New("fell behind the conversation's events")
	// ErrEnded: the conversation was deleted; no more events will come.
	ErrEnded = errors.New("the conversation was deleted")
	// ErrClosed: Close ended the feed.
	ErrClosed = errors.New("feed closed")
)

// Reader reads a conversation's stored events in log order: at most limit of those whose Seq
// is greater than afterSeq. A short answer means the log has no more for now.
type Reader func(ctx context.Context, afterSeq int64, limit int) ([]Event, error)

// FeedOptions say where a feed starts and how far its reader may fall behind.
type FeedOptions struct {
	// Read reads the stored log. nil replays nothing: the feed starts with the events
	// published after Follow.
	Read Reader
	// AfterSeq is where the replay starts: after the event with this Seq; 0 replays the whole
	// log.
	AfterSeq int64
	// Buffer is how many live events may wait for the reader (at least 1); the feed ends with
	// ErrLagged when one more comes.
	Buffer int
	// Page is how many stored events are read at a time; 0 means 100.
	Page int
}

// DefaultFeedPage is how many stored events a feed reads at a time by default.
const DefaultFeedPage = 100

// Feed is one reader's view of a conversation's log (see Follow). Its goroutine is owned by
// the feed: Close stops it and waits for it.
type Feed struct {
	// C delivers the events, each once, in log order, transient ones (Seq 0, never stored)
	// among the live ones as they are published. It is closed when the feed ends; Err then
	// says why.
	C <-chan Event

	c      chan Event
	cancel context.CancelCauseFunc
	done   chan struct{}
	err    error // set before c is closed
}

// Follow starts a feed of the conversation's events: the stored events after o.AfterSeq that
// o.Read returns, then every event published from now on. The feed ends when ctx ends, when
// Close is called, when the reader falls o.Buffer events behind (ErrLagged), when the
// conversation ends (ErrEnded), or when a read fails.
//
// The guarantee holds for events of conversations that are stored and published through
// Record.
func Follow(ctx context.Context, b Bus, conversationID string, o FeedOptions) *Feed {
	ctx, cancel := context.WithCancelCause(ctx)
	c := make(chan Event)
	f := &Feed{C: c, c: c, cancel: cancel, done: make(chan struct{})}
	sub, err := b.Subscribe(ctx, conversationID, o.Buffer)
	if err != nil {
		f.err = fmt.Errorf("follow conversation %s: %w", conversationID, err)
		close(f.c)
		close(f.done)
		return f
	}
	go func() {
		defer close(f.done)
		defer close(f.c)
		defer sub.Close()
		f.err = f.run(ctx, sub, o)
	}()
	return f
}

// Close ends the feed and waits for its goroutine. Safe to call twice.
func (f *Feed) Close() {
	f.cancel(ErrClosed)
	<-f.done
}

// Err says why the feed ended; it waits for the end.
func (f *Feed) Err() error {
	<-f.done
	return f.err
}

func (f *Feed) run(ctx context.Context, sub *Subscription, o FeedOptions) error {
	last := o.AfterSeq
	if o.Read != nil {
		page := o.Page
		if page <= 0 {
			page = DefaultFeedPage
		}
		for {
			evs, err := o.Read(ctx, last, page)
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if err != nil {
				return err
			}
			for _, e := range evs {
				if !f.send(ctx, e) {
					return context.Cause(ctx)
				}
				last = max(last, e.Seq)
			}
			if len(evs) < page {
				break
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case e, ok := <-sub.C:
			switch {
			case !ok && sub.Ended():
				return ErrEnded
			case !ok && sub.Lagged():
				return ErrLagged
			case !ok:
				return ErrClosed
			case e.Seq != 0 && e.Seq <= last:
				continue // read from the store already
			}
			if !f.send(ctx, e) {
				return context.Cause(ctx)
			}
			last = max(last, e.Seq)
		}
	}
}

func (f *Feed) send(ctx context.Context, e Event) bool {
	select {
	case f.c <- e:
		return true
	case <-ctx.Done():
		return false
	}
}
