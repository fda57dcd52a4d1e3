package event

import (
	"context"
	"fmt"
	"sync"
)

// Bus tells live readers (the streams, the agent loop's tests) about events appended to
// conversations. Writers store events and publish them through Record, which publishes only
// what the store has committed, and a conversation's events in the order the store numbered
// them (Seq): a reader that misses a publication can always catch up from the store, and a
// reader that follows the bus after reading the store (Follow) sees no gap and no reordering.
//
// All methods are safe for concurrent use. Publish never blocks on a reader: a subscriber
// whose buffer is full is dropped (Subscription.Lagged) and catches up from the store.
//
// LocalBus delivers the appends of its own process; a bus whose writers are several
// processes on one store (replicas) must deliver every writer's appends to every reader,
// with the same guarantees.
type Bus interface {
	// Record stores evs, all events of conversationID, with store, which must commit them
	// and set their Seq (as Store.AppendEvents does), and then publishes them. Nothing is
	// published when store fails.
	Record(conversationID string, store func() error, evs []Event) error
	// Publish delivers transient events (Seq 0, never stored) to the subscribers of their
	// conversations: live readers get them, and nobody can read them again.
	Publish(evs ...Event)
	// End closes every subscription of the conversation, which is gone: its readers learn
	// that no more events will come (Subscription.Ended).
	End(conversationID string)
	// Subscribe returns a subscription to the conversation's events with room for buffer
	// events (at least 1): every event published from now on (a stored event committed
	// before the call is in the store for the reader to read). Most readers want Follow,
	// which also reads the stored log. It fails only when the bus cannot learn where the
	// conversation's log ends (a bus on a database that does not answer).
	Subscribe(ctx context.Context, conversationID string, buffer int) (*Subscription, error)
	// Subscribers returns how many subscriptions the conversation has in this process.
	Subscribers(conversationID string) int
	// Stats counts this process's subscriptions, for the server's metrics.
	Stats() BusStats
}

// Checker is the optional ability of a bus that depends on a connection (a database's
// notifications) to say whether it works now, for readiness probes.
type Checker interface {
	Check(ctx context.Context) error
}

// LocalBus is the in-process Bus: it orders and delivers the appends of this process only,
// which is all there is when one process writes the store (SQLite). The zero value is
// ready.
type LocalBus struct {
	mu    sync.Mutex
	subs  map[string]map[*Subscription]struct{}
	stats BusStats

	// appending holds one lock per conversation being recorded, so that its records run one
	// at a time (see Record).
	appendingMu sync.Mutex
	appending   map[string]*convLock
}

type convLock struct {
	mu    sync.Mutex
	users int
}

// BusStats count a bus's subscriptions (each feed holds one), for the server's metrics.
type BusStats struct {
	// Subscribers is the number of open subscriptions.
	Subscribers int
	// Lagged, Ended and Closed count the subscriptions that ended since the bus was made:
	// dropped for falling behind, ended with their conversation, and closed by their reader.
	Lagged, Ended, Closed uint64
}

// Stats returns the bus's counts.
func (b *LocalBus) Stats() BusStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Subscription receives the events published for one conversation, in publication order.
type Subscription struct {
	// C delivers the events. It is closed by Close; when the subscriber fell more than its
	// buffer behind (then Lagged reports true and the reader should read the store from the
	// last event it saw); and when the conversation ended (then Ended reports true: it has
	// no more events). Events buffered before the close are still delivered.
	C <-chan Event

	c      chan Event
	gone   chan struct{} // closed with c
	bus    *LocalBus
	convID string
	lagged bool  // guarded by bus.mu
	ended  bool  // guarded by bus.mu
	closed bool  // guarded by bus.mu: off the bus, nothing more is delivered
	cause  error // guarded by bus.mu: why it was closed

	// A feed's subscription (see Feed) is held while the feed replays the store: what is
	// published meanwhile waits in pending (as much as c holds), and the feed's goroutine,
	// the only sender on c until then, also closes c should the subscription end. Once the
	// feed releases it, Publish sends on c itself and skips the stored events up to after,
	// which the replay delivered. All guarded by bus.mu.
	held    bool
	pending []Event
	after   int64
}

// Subscribe returns a subscription to the conversation's events with room for buffer events
// (at least 1). It never fails. Most readers want Follow, which also reads the stored log.
func (b *LocalBus) Subscribe(_ context.Context, conversationID string, buffer int) (*Subscription, error) {
	return b.subscribe(conversationID, buffer), nil
}

func (b *LocalBus) subscribe(conversationID string, buffer int) *Subscription {
	c := make(chan Event, max(buffer, 1))
	s := &Subscription{C: c, c: c, gone: make(chan struct{}), bus: b, convID: conversationID}
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

// Record stores evs, all events of conversationID, with store, which must commit them and
// set their Seq (as Store.AppendEvents does), and then publishes them. Records of one
// conversation run one at a time, the store and the publication together, so that its
// events are published in Seq order; other conversations do not wait. Nothing is published
// when store fails.
func (b *LocalBus) Record(conversationID string, store func() error, evs []Event) error {
	unlock := b.lockConversation(conversationID)
	defer unlock()
	if err := store(); err != nil {
		return err
	}
	for _, e := range evs {
		if e.ConversationID != conversationID || e.Seq == 0 {
			return fmt.Errorf("record event %s: stored for conversation %q with seq %d, want %q and a seq", e.ID, e.ConversationID, e.Seq, conversationID)
		}
	}
	b.Publish(evs...)
	return nil
}

func (b *LocalBus) lockConversation(id string) (unlock func()) {
	b.appendingMu.Lock()
	if b.appending == nil {
		b.appending = map[string]*convLock{}
	}
	l := b.appending[id]
	if l == nil {
		l = &convLock{}
		b.appending[id] = l
	}
	l.users++
	b.appendingMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		b.appendingMu.Lock()
		if l.users--; l.users == 0 {
			delete(b.appending, id)
		}
		b.appendingMu.Unlock()
	}
}

// Publish delivers evs to the subscribers of their conversations. It never blocks: a
// subscriber whose buffer is full is dropped (see Subscription.C). Stored events are
// published by Record; Publish by itself is for transient events, which are never stored
// (their Seq is 0): live readers get them, and nobody can read them again.
func (b *LocalBus) Publish(evs ...Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range evs {
		for s := range b.subs[e.ConversationID] {
			s.deliverLocked(e)
		}
	}
}

// deliverLocked hands e to the subscription, or drops the subscription when its buffer is
// full.
func (s *Subscription) deliverLocked(e Event) {
	switch {
	case e.Seq != 0 && e.Seq <= s.after:
		// Its feed's replay read it from the store.
	case s.held && len(s.pending) < cap(s.c):
		s.pending = append(s.pending, e)
	case s.held:
		s.lagged = true
		s.closeLocked(ErrLagged)
	default:
		select {
		case s.c <- e:
		default:
			s.lagged = true
			s.closeLocked(ErrLagged)
		}
	}
}

// End closes every subscription of the conversation, which is gone: its readers learn that
// no more events will come (Subscription.Ended).
func (b *LocalBus) End(conversationID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[conversationID] {
		s.ended = true
		s.closeLocked(ErrEnded)
	}
}

// Subscribers returns how many subscriptions the conversation has.
func (b *LocalBus) Subscribers(conversationID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[conversationID])
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
func (s *Subscription) Close() { s.closeFor(ErrClosed) }

// closeFor ends the subscription for cause, unless it has ended already.
func (s *Subscription) closeFor(cause error) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked(cause)
}

// closeLocked takes the subscription off the bus for cause and closes its channel, unless a
// feed's replay holds the channel: the feed closes it once it has delivered what was
// published before the end.
func (s *Subscription) closeLocked(cause error) {
	if s.closed {
		return
	}
	s.closed, s.cause = true, cause
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
	if !s.held {
		s.closeChannelLocked()
	}
}

func (s *Subscription) closeChannelLocked() {
	close(s.c)
	close(s.gone)
}

// hold makes a fresh subscription a feed's (see the held field): what was published to it
// before moves to pending. It reports false when the subscription has ended already: its
// channel is closed, and it is left as it is.
func (s *Subscription) hold() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	if s.closed {
		return false
	}
	s.held = true
	for {
		select {
		case e := <-s.c:
			s.pending = append(s.pending, e)
		default:
			return true
		}
	}
}

// release delivers with send what was published while the feed replayed the store up to
// last (skipping what the replay delivered), until nothing waits; then the bus delivers
// itself. A subscription that ended meanwhile has its channel closed instead. release fails
// only when send does (its reader is gone), and the subscription is then still held.
func (s *Subscription) release(last int64, send func(Event) error) error {
	for {
		s.bus.mu.Lock()
		evs := s.pending
		s.pending = nil
		if len(evs) == 0 {
			s.held = false
			if s.closed {
				s.closeChannelLocked()
			} else {
				s.after = last
			}
			s.bus.mu.Unlock()
			return nil
		}
		s.bus.mu.Unlock()
		for _, e := range evs {
			if e.Seq != 0 && e.Seq <= last {
				continue
			}
			if err := send(e); err != nil {
				return err
			}
			last = max(last, e.Seq)
		}
	}
}

// abandon ends a held subscription whose feed stopped replaying, for cause (unless it ended
// already), and closes its channel.
func (s *Subscription) abandon(cause error) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked(cause)
	s.held, s.pending = false, nil
	s.closeChannelLocked()
}

// err says why the subscription ended; it waits for the end.
func (s *Subscription) err() error {
	<-s.gone
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.cause
}
