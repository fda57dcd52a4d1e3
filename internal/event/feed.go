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

// Feed is one reader's view of a conversation's log (see Follow). While it replays the store
// a goroutine owned by the feed sends the stored events; Close stops it and waits for it.
// Live events go from the bus straight to C, with no goroutine between: a live event wakes
// only its reader.
type Feed struct {
	// C delivers the events, each once, in log order, transient ones (Seq 0, never stored)
	// among the live ones as they are published. It is closed when the feed ends; Err then
	// says why.
	C <-chan Event

	sub    *Subscription // nil when the subscription failed
	cancel context.CancelCauseFunc
	stop   func() bool   // the end of the feed with its context, registered
	done   chan struct{} // closed when the replay is over
	err    error         // why the subscription failed
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
	f := &Feed{cancel: cancel, stop: func() bool { return false }, done: make(chan struct{})}
	sub, err := b.Subscribe(ctx, conversationID, o.Buffer)
	if err != nil {
		f.err = fmt.Errorf("follow conversation %s: %w", conversationID, err)
		c := make(chan Event)
		close(c)
		f.C = c
		close(f.done)
		return f
	}
	f.sub, f.C = sub, sub.C
	if !sub.hold() {
		// Ended already (its conversation is gone): nothing to replay.
		close(f.done)
		return f
	}
	f.stop = context.AfterFunc(ctx, func() { sub.closeFor(context.Cause(ctx)) })
	if o.Read == nil {
		// Nothing to replay: what was published since the subscription fits the channel.
		defer close(f.done)
		f.release(ctx, o.AfterSeq)
		return f
	}
	go func() {
		defer close(f.done)
		last, err := f.replay(ctx, o)
		if err != nil {
			sub.abandon(err)
			return
		}
		f.release(ctx, last)
	}()
	return f
}

// Close ends the feed and waits for its goroutine. Safe to call twice.
func (f *Feed) Close() {
	f.cancel(ErrClosed)
	<-f.done
	if f.sub != nil {
		f.stop()
		f.sub.closeFor(ErrClosed)
	}
}

// Err says why the feed ended; it waits for the end.
func (f *Feed) Err() error {
	if f.sub == nil {
		return f.err
	}
	return f.sub.err()
}

// replay sends the stored events after o.AfterSeq and returns the Seq of the last one.
func (f *Feed) replay(ctx context.Context, o FeedOptions) (int64, error) {
	last := o.AfterSeq
	page := o.Page
	if page <= 0 {
		page = DefaultFeedPage
	}
	for {
		evs, err := o.Read(ctx, last, page)
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if err := f.send(ctx, e); err != nil {
				return 0, err
			}
			last = max(last, e.Seq)
		}
		if len(evs) < page {
			return last, nil
		}
	}
}

// release hands the subscription to the bus once what was published during the replay is
// delivered; a feed whose context ends first ends.
func (f *Feed) release(ctx context.Context, last int64) {
	if err := f.sub.release(last, func(e Event) error { return f.send(ctx, e) }); err != nil {
		f.sub.abandon(err)
	}
}

// send hands e to the reader while the feed's subscription is held (only the feed sends on
// its channel then).
func (f *Feed) send(ctx context.Context, e Event) error {
	select {
	case f.sub.c <- e:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
