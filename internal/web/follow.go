package web

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// errEnded: the conversation was deleted.
var errEnded = errors.New("the conversation was deleted")

// feed is a conversation's log from a point on: each event once, in order, then why it ended.
type feed struct {
	C     <-chan event.Event
	err   error
	done  chan struct{}
	close context.CancelFunc
}

func (f *feed) Err() error { <-f.done; return f.err }
func (f *feed) Close()     { f.close(); <-f.done }

// follow starts a feed of the conversation after the event afterID ("" : from the start).
func (a *App) follow(ctx context.Context, ownerID, convID, afterID string) (*feed, error) {
	var afterSeq int64
	if afterID != "" {
		evs, err := a.d.Conversations.GetEvents(ctx, ownerID, []string{afterID})
		if err != nil {
			return nil, err
		}
		if len(evs) != 1 || evs[0] == nil || evs[0].ConversationID != convID {
			return nil, &webError{400, fmt.Sprintf("No event %q in this conversation.", afterID)}
		}
		afterSeq = evs[0].Seq
	}
	sub := a.d.Conversations.Subscribe(convID, streamBuffer)
	ctx, cancel := context.WithCancel(ctx)
	c := make(chan event.Event)
	f := &feed{C: c, done: make(chan struct{}), close: cancel}
	send := func(e event.Event) bool {
		select {
		case c <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(f.done)
		defer close(c)
		defer sub.Close()
		last := afterSeq
		cursor := ""
		for {
			evs, next, err := a.d.Conversations.SearchEvents(ctx, ownerID, event.Filter{ConversationID: convID}, false, paging.Query{Limit: paging.MaxLimit, Cursor: cursor})
			if err != nil {
				f.err = err
				return
			}
			for _, e := range evs {
				if e.Seq > last {
					if !send(e) {
						return
					}
					last = e.Seq
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.C:
				if !ok {
					if sub.Ended() {
						f.err = errEnded
					}
					return
				}
				if e.Seq != 0 && e.Seq <= last {
					continue
				}
				if !send(e) {
					return
				}
				last = max(last, e.Seq)
			}
		}
	}()
	return f, nil
}
