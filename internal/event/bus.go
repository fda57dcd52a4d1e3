package event

import "sync"

// Bus tells live readers (the agent loop, streaming clients) about events appended to a
// conversation. Writers publish only what the store has committed, so a reader that misses
// a publication can always catch up from the store. Safe for concurrent use; the zero value
// is ready.
type Bus struct {
	mu    sync.Mutex
	subs  map[string]map[*Subscription]struct{}
	stats BusStats
}

// BusStats count a bus's subscriptions, for the server's metrics.
type BusStats struct {
	// Subscribers is the number of open subscriptions.
	Subscribers int
	// Lagged, Ended and Closed count the subscriptions that ended since the bus was made:
	// dropped for falling behind, ended with their conversation, and closed by their reader.
	Lagged, Ended, Closed uint64
}

// Stats returns the bus's counts.
func (b *Bus) Stats() BusStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Subscription receives the events published for one conversation, in publication order.
type Subscription struct {
	// C delivers the events. It is closed by Close; when the subscriber fell more than its
	// buffer behind (then Lagged reports true and the reader should read the store from the
	// last event it saw); and when the conversation ended (then Ended reports true: it has
	// no more events).
	C <-chan Event

	c      chan Event
	bus    *Bus
	convID string
	lagged bool // guarded by bus.mu
	ended  bool // guarded by bus.mu
	closed bool // guarded by bus.mu
}

// Subscribe returns a subscription to the conversation's events with room for buffer events
// (at least 1).
func (b *Bus) Subscribe(conversationID string, buffer int) *Subscription {
	c := make(chan Event, max(buffer, 1))
	s := &Subscription{C: c, c: c, bus: b, convID: conversationID}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[string]map[*Subscription]struct{}{}
	}
	if b.subs[conversationID] == nil {
		b.subs[conversationID] = map[*Subscription]struct{}{}
	}
	b.subs[conversationID][s] = struct{}{}
	b.stats.Subscribers++
	return s
}

// Publish delivers evs to the subscribers of their conversations. It never blocks: a
// subscriber whose buffer is full is dropped (see Subscription.C).
func (b *Bus) Publish(evs ...Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range evs {
		for s := range b.subs[e.ConversationID] {
			select {
			case s.c <- e:
			default:
				s.lagged = true
				s.closeLocked()
			}
		}
	}
}

// End closes every subscription of the conversation, which is gone: its readers learn that
// no more events will come (Subscription.Ended).
func (b *Bus) End(conversationID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[conversationID] {
		s.ended = true
		s.closeLocked()
	}
}

// Ended reports whether the subscription was closed because its conversation ended.
func (s *Subscription) Ended() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.ended
}

// Lagged reports whether the subscription was dropped for falling behind.
func (s *Subscription) Lagged() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.lagged
}

// Close ends the subscription. Safe to call twice.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked()
}

func (s *Subscription) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	close(s.c)
	st := &s.bus.stats
	st.Subscribers--
	switch {
	case s.lagged:
		st.Lagged++
	case s.ended:
		st.Ended++
	default:
		st.Closed++
	}
	m := s.bus.subs[s.convID]
	delete(m, s)
	if len(m) == 0 {
		delete(s.bus.subs, s.convID)
	}
}
