package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
)

// Bus is the event.Bus of replicas that share one database: every replica's subscribers get
// every replica's events, through the database.
//
// The stored events travel through the store itself. Every transaction that appends to a log
// notifies EventsChannel ("conversation X has events up to n"), which PostgreSQL delivers to
// every listening connection when the transaction commits. Each replica's Bus listens on a
// connection of its own and keeps, for each conversation that has subscribers in this
// process, the Seq of the last event it published to them. Told of events after it, it reads
// them from the store (once for all the conversation's subscribers here) and publishes them in
// Seq order. A conversation's events become visible in Seq order (the appends hold its row
// lock), so such a read never skips one that commits later; and a notification only says
// "there is more", so one lost to a broken connection costs nothing: after reconnecting, the
// Bus reads every followed conversation again. Events recorded through this Bus are read and
// published at once, without waiting for their notification.
//
// Transient events (Publish) and the end of a conversation (End) are not stored: they travel
// in the notification itself, as JSON (up to PostgreSQL's limit of 8000 bytes; a larger
// transient event reaches this replica's subscribers only, and is logged).
//
// Subscriptions, their buffers and their counts (Subscribers, Stats) are this process's: the
// bus delivers to them through an event.LocalBus. A conversation whose last subscriber here
// left is forgotten at its next notification or at the next sweep (follow).
type Bus struct {
	store *Store
	log   *slog.Logger
	self  string // this replica's id, which its own notifications carry
	local event.LocalBus
	// wakeups are this replica's (conversation.Waker).
	wakeups chan struct{}

	mu    sync.Mutex
	convs map[string]*followed // conversations with subscribers here (and some left: sweep)
	// sweepAt is the number of entries at which follow next sweeps out the conversations
	// left without subscribers.
	sweepAt int

	listening atomic.Bool
	stop      context.CancelFunc
	done      chan struct{}
}

// followed is a conversation with subscribers in this process.
type followed struct {
	mu sync.Mutex // held while its events are read and published: one catch-up at a time
	// last is the Seq of the last event published to its subscribers, or of the end of its
	// log when its first subscriber came; -1 until then.
	last int64
}

// catchUpTimeout bounds one read of a conversation's new events.
const catchUpTimeout = 30 * time.Second

// NewBus starts a Bus on the store's database for the replica named replica (its id, as its
// leases name it; "" for a random one); Close stops it. It returns at once: the connection it
// listens on is made in the background, and again whenever it breaks (Check says whether it
// listens now).
func NewBus(s *Store, replica string, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if replica == "" {
		replica = id.New()
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bus{store: s, log: log, self: replica, wakeups: make(chan struct{}, 1), convs: map[string]*followed{},
		sweepAt: minSweep, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.listen(ctx)
	}()
	return b
}

// Close stops listening and waits for the listener. Subscriptions stay open: their owners
// close them. Safe to call twice.
func (b *Bus) Close() error {
	b.stop()
	<-b.done
	return nil
}

// Check reports whether the Bus listens to the database's notifications now, for readiness
// probes: without that, this replica's streams miss what the others record until it listens
// again (then they catch up).
func (b *Bus) Check(context.Context) error {
	if !b.listening.Load() {
		return errors.New("not listening to the database's notifications")
	}
	return nil
}

// Record stores evs with store, then reads and publishes the conversation's new events to
// this process's subscribers. The other replicas hear of them from the database.
func (b *Bus) Record(conversationID string, store func() error, evs []event.Event) error {
	if err := store(); err != nil {
		return err
	}
	var last int64
	for _, e := range evs {
		if e.ConversationID != conversationID || e.Seq == 0 {
			return fmt.Errorf("record event %s: stored for conversation %q with seq %d, want %q and a seq", e.ID, e.ConversationID, e.Seq, conversationID)
		}
		last = max(last, e.Seq)
	}
	b.catchUp(conversationID, last)
	return nil
}

// Publish delivers transient events to the subscribers of every replica.
func (b *Bus) Publish(evs ...event.Event) {
	b.local.Publish(evs...)
	for _, e := range evs {
		payload, err := json.Marshal(transient{ID: e.ID, ConversationID: e.ConversationID, Kind: e.Kind,
			Source: e.Source, Timestamp: e.Timestamp, Body: e.Body})
		if err == nil {
			err = b.notify("t " + b.self + " " + string(payload))
		}
		if err != nil {
			b.log.Warn("a transient event reaches this replica's streams only", "conversation_id", e.ConversationID, "kind", e.Kind, "err", err)
		}
	}
}

// End ends the conversation's subscriptions on every replica.
func (b *Bus) End(conversationID string) {
	b.local.End(conversationID)
	if err := b.notify("x " + b.self + " " + conversationID); err != nil {
		b.log.Warn("the end of a conversation reaches this replica's streams only", "conversation_id", conversationID, "err", err)
	}
}

// Subscribe subscribes in this process. The first subscriber of a conversation here reads
// where its log ends: from there on the Bus publishes what follows.
func (b *Bus) Subscribe(ctx context.Context, conversationID string, buffer int) (*event.Subscription, error) {
	f := b.follow(conversationID)
	f.mu.Lock()
	defer f.mu.Unlock()
	for !b.following(conversationID, f) {
		// A catch-up forgot it meanwhile, as it had no subscriber: take the entry now.
		f.mu.Unlock()
		f = b.follow(conversationID)
		f.mu.Lock()
	}
	if f.last < 0 || b.local.Subscribers(conversationID) == 0 {
		last, err := b.store.lastSeq(ctx, conversationID)
		if err != nil {
			b.forget(conversationID, f)
			return nil, fmt.Errorf("subscribe to conversation %s: %w", conversationID, err)
		}
		f.last = last
	}
	return b.local.Subscribe(ctx, conversationID, buffer)
}

// Wake tells the replica holder that commands wait for it (conversation.Waker).
func (b *Bus) Wake(holder string) {
	if holder == b.self {
		b.wakeUp()
		return
	}
	if err := b.notify("w " + holder); err != nil {
		b.log.Warn("wake a replica; it finds its commands at its next look", "replica", holder, "err", err)
	}
}

// Wakeups delivers this replica's wake-ups: a command waits for it, or it listens again
// after a broken connection and may have missed some.
func (b *Bus) Wakeups() <-chan struct{} { return b.wakeups }

func (b *Bus) wakeUp() {
	select {
	case b.wakeups <- struct{}{}:
	default:
	}
}

// Subscribers counts this process's subscriptions of the conversation.
func (b *Bus) Subscribers(conversationID string) int { return b.local.Subscribers(conversationID) }

// Stats counts this process's subscriptions.
func (b *Bus) Stats() event.BusStats { return b.local.Stats() }

// transient is a transient event as a notification carries it.
type transient struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversation_id"`
	Kind           string          `json:"kind"`
	Source         string          `json:"source"`
	Timestamp      time.Time       `json:"timestamp"`
	Body           json.RawMessage `json:"body"`
}

// maxPayload is PostgreSQL's limit on a notification's payload, less a margin.
const maxPayload = 7900

func (b *Bus) notify(payload string) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("%d bytes, over the %d a notification holds", len(payload), maxPayload)
	}
	_, err := b.store.exec(context.Background(), `SELECT pg_notify($1, $2)`, EventsChannel, payload)
	return err
}

// minSweep is the least number of entries at which follow sweeps.
const minSweep = 256

// follow returns the conversation's entry, made if needed. An entry stays when its last
// subscriber here leaves, until a notification of the conversation finds it without
// subscribers (catchUp) or a sweep here does: follow sweeps whenever the entries have doubled
// since the last sweep left them (and are at least minSweep), so that conversations
// followed once (a finished one opened, an id nobody owns asked for) take no memory for
// good, at a cost that stays a constant share of follow's.
func (b *Bus) follow(conversationID string) *followed {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.convs[conversationID]
	if f == nil {
		if len(b.convs) >= b.sweepAt {
			b.sweepLocked()
		}
		f = &followed{last: -1}
		b.convs[conversationID] = f
	}
	return f
}

// sweepLocked drops the entries of the conversations without subscribers here. An entry busy
// now (a catch-up reads its events, a subscriber is being added) is left: whoever holds it
// forgets it if it ends without subscribers. The caller holds b.mu.
func (b *Bus) sweepLocked() {
	for id, f := range b.convs {
		if !f.mu.TryLock() {
			continue
		}
		if b.local.Subscribers(id) == 0 {
			delete(b.convs, id)
		}
		f.mu.Unlock()
	}
	b.sweepAt = max(minSweep, 2*len(b.convs))
}

// following reports whether f is the conversation's entry.
func (b *Bus) following(conversationID string, f *followed) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.convs[conversationID] == f
}

// catchUp reads the conversation's events after the last one published here, when some may
// be new (upTo is past it, or 0: unknown), and publishes them to its subscribers here. A
// conversation nobody here follows any more is forgotten.
func (b *Bus) catchUp(conversationID string, upTo int64) {
	b.mu.Lock()
	f := b.convs[conversationID]
	b.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !b.following(conversationID, f) {
		return // forgotten meanwhile; a subscriber since has an entry of its own
	}
	if b.local.Subscribers(conversationID) == 0 {
		b.forget(conversationID, f)
		return
	}
	if f.last < 0 || (upTo > 0 && upTo <= f.last) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
	defer cancel()
	evs, err := b.store.ConversationEvents(ctx, conversationID, f.last)
	if err != nil {
		// The next notification, or the next reconnection, reads them again.
		b.log.Warn("read a conversation's new events for its streams", "conversation_id", conversationID, "err", err)
		return
	}
	if len(evs) == 0 {
		return
	}
	b.local.Publish(evs...)
	f.last = evs[len(evs)-1].Seq
}

// forget drops f, the entry of a conversation without subscribers here, unless another
// came meanwhile. The caller holds f.mu.
func (b *Bus) forget(conversationID string, f *followed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.convs[conversationID] == f && b.local.Subscribers(conversationID) == 0 {
		delete(b.convs, conversationID)
	}
}

// followedIDs returns the conversations followed here.
func (b *Bus) followedIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.convs))
	for id := range b.convs {
		ids = append(ids, id)
	}
	return ids
}

// Backoff of the listener's reconnections.
const (
	listenRetryFirst = 100 * time.Millisecond
	listenRetryMax   = 5 * time.Second
)

// listen keeps a connection that listens on EventsChannel until ctx ends, and handles its
// notifications; a broken connection is made again, with backoff, and every followed
// conversation is read again, as notifications may have been missed meanwhile.
func (b *Bus) listen(ctx context.Context) {
	delay := listenRetryFirst
	for ctx.Err() == nil {
		err := b.listenOnce(ctx, func() { delay = listenRetryFirst })
		b.listening.Store(false)
		b.store.keys.use(false)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("listening to the database's notifications stopped; listening again", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, listenRetryMax)
	}
}

func (b *Bus) listenOnce(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, b.store.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+EventsChannel); err != nil {
		return err
	}
	b.store.keys.use(true)
	b.listening.Store(true)
	connected()
	// What was appended, and the commands left, while nobody listened.
	for _, id := range b.followedIDs() {
		b.catchUp(id, 0)
	}
	b.wakeUp()
	var handlers sync.WaitGroup
	defer handlers.Wait()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		b.handle(n.Payload, &handlers)
	}
}

// handle acts on one notification: a log that grew is read for the conversation's
// subscribers here (in a goroutine of its own, so that one slow read holds up no other
// conversation); a transient event of another replica is published here, and so is the end
// of a conversation.
func (b *Bus) handle(payload string, handlers *sync.WaitGroup) {
	kind, rest, _ := strings.Cut(payload, " ")
	switch kind {
	case "e":
		conv, seqText, _ := strings.Cut(rest, " ")
		seq, err := strconv.ParseInt(seqText, 10, 64)
		if err != nil {
			return
		}
		b.mu.Lock()
		f := b.convs[conv]
		b.mu.Unlock()
		if f == nil {
			return
		}
		handlers.Go(func() { b.catchUp(conv, seq) })
	case "t":
		from, body, _ := strings.Cut(rest, " ")
		if from == b.self {
			return
		}
		var t transient
		if err := json.Unmarshal([]byte(body), &t); err != nil {
			return
		}
		b.local.Publish(event.Event{ID: t.ID, ConversationID: t.ConversationID, Kind: t.Kind, Source: t.Source,
			Timestamp: t.Timestamp, Body: t.Body})
	case "x":
		from, conv, _ := strings.Cut(rest, " ")
		if from != b.self {
			b.local.End(conv)
		}
	case keysChanged:
		b.store.keys.empty()
	case "w":
		if rest == b.self {
			b.wakeUp()
		}
	}
}

// lastSeq is the Seq of the conversation's last event, 0 for none.
func (s *Store) lastSeq(ctx context.Context, conversationID string) (int64, error) {
	var last int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE conversation_id = $1`, conversationID).Scan(&last)
	return last, err
}

var (
	_ event.Bus          = (*Bus)(nil)
	_ conversation.Waker = (*Bus)(nil)
)
