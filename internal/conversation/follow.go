package conversation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// ErrUnknownEvent: a feed was asked to start after an event that is not in the conversation's
// log.
var ErrUnknownEvent = errors.New("no such event in the conversation")

// FeedStart says where a feed of a conversation starts. The zero value replays the whole log.
type FeedStart struct {
	// AfterEventID starts after that event of the conversation's log: what a client that
	// received it up to there needs, also after a restart of the server.
	AfterEventID string
	// Since, without AfterEventID, replays the events with a timestamp at or after it.
	Since *time.Time
	// Live replays nothing: only the events appended from now on.
	Live bool
}

// Follow opens a feed of the owner's conversation (see event.Feed): the stored events from
// start on, then every event appended later, each once, in log order. buffer bounds how far
// the reader may fall behind the live events before the feed ends with event.ErrLagged. The
// feed ends with ctx, with Close, and with event.ErrEnded when the conversation is deleted.
// ErrNotFound when the owner has no such conversation; ErrUnknownEvent when AfterEventID is
// not one of its events.
func (s *Service) Follow(ctx context.Context, ownerID, convID string, start FeedStart, buffer int) (*event.Feed, error) {
	if _, err := s.o.Store.GetConversation(ctx, ownerID, convID); err != nil {
		return nil, err
	}
	o := event.FeedOptions{Buffer: buffer, Page: paging.MaxLimit}
	if start.AfterEventID != "" {
		evs, err := s.o.Events.GetEvents(ctx, ownerID, []string{start.AfterEventID})
		if err != nil {
			return nil, fmt.Errorf("follow conversation %s: %w", convID, err)
		}
		if len(evs) != 1 || evs[0] == nil || evs[0].ConversationID != convID {
			return nil, fmt.Errorf("follow conversation %s after %q: %w", convID, start.AfterEventID, ErrUnknownEvent)
		}
		o.AfterSeq = evs[0].Seq
	}
	if !start.Live {
		f := event.Filter{ConversationID: convID}
		if start.AfterEventID == "" {
			f.TimestampGTE = start.Since
		}
		o.Read = func(ctx context.Context, afterSeq int64, limit int) ([]event.Event, error) {
			f.AfterSeq = afterSeq
			evs, _, err := s.o.Events.SearchEvents(ctx, ownerID, f, false, paging.Query{Limit: limit})
			return evs, err
		}
	}
	feed := event.Follow(ctx, s.o.Bus, convID, o)
	// Once subscribed, the conversation must still be there: a deletion before the
	// subscription ended the conversation's feeds before this one could hear of it.
	if _, err := s.o.Store.GetConversation(ctx, ownerID, convID); err != nil {
		feed.Close()
		return nil, err
	}
	return feed, nil
}

// Followers returns how many subscriptions follow the conversation's events now: its open
// feeds (a feed that fell behind is no longer among them).
func (s *Service) Followers(convID string) int { return s.o.Bus.Subscribers(convID) }
