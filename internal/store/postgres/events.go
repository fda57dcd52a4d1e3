package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// Seq and the order in which events become visible. Seq comes from one sequence (the identity
// of events), so it increases across all events, as the SQLite store's does. A sequence hands
// out numbers in the order they are asked for, not the order their transactions commit: of
// two appends running at once, the one that drew the smaller numbers may commit last, and a
// reader in between would see a gap that fills later, which a feed (read up to Seq n, then
// follow from n) would miss for good. So an append draws its numbers only while it holds the
// row lock of its conversation (lockConversations), and holds it until it commits: the appends
// to one conversation follow one another, each drawing its numbers after the previous one
// committed. A reader that sees an event of a conversation therefore sees every earlier one.
//
// Across conversations no such order holds: an append to conversation A may commit after
// one to conversation B that drew greater numbers. A listing of a user's events across
// conversations (the cursor is a Seq) may thus miss an event that commits behind a page it
// already read; one conversation's log never does, and feeds read one conversation's log.

// AppendEvents inserts evs in one transaction, in order. Seq is set on the elements only once
// the transaction has committed. Appending to a conversation that does not exist fails with
// conversation.ErrNotFound.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var seqs []int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockConversations(ctx, tx, evs); err != nil {
			return err
		}
		var err error
		seqs, err = insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	for i := range evs {
		evs[i].Seq = seqs[i]
	}
	return nil
}

// lockConversations takes the row locks of the conversations of evs, in the order of their
// ids (so that two appends to the same conversations cannot deadlock). FOR NO KEY UPDATE
// conflicts with itself and with updates and deletes of the row, not with the foreign key
// checks of the events inserted meanwhile.
func lockConversations(ctx context.Context, tx pgx.Tx, evs []event.Event) error {
	for _, id := range conversationsOf(evs) {
		err := lockConversation(ctx, tx, id)
		if errors.Is(err, conversation.ErrNotFound) {
			i := slices.IndexFunc(evs, func(e event.Event) bool { return e.ConversationID == id })
			return fmt.Errorf("event %s: conversation %s: %w", evs[i].ID, id, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lockConversation takes the row lock of a conversation (see lockConversations);
// conversation.ErrNotFound when it does not exist.
func lockConversation(ctx context.Context, tx pgx.Tx, id string) error {
	var b pgx.Batch
	queueLock(&b, id, conversation.StateUpdate{})
	br := tx.SendBatch(ctx, &b)
	return errors.Join(readLock(br, conversation.StateUpdate{}), br.Close())
}

// The statements of queueLock. The conversation's row is locked in a materialized CTE
// so that it is locked before the lease's row: the projection of a plain SELECT … FOR NO
// KEY UPDATE runs below its row lock, and would lock the lease first. A deletion of the
// conversation locks the two in that order (its row, then the lease's by the cascade), and a
// record that held the lease's row while it waited for the conversation's would deadlock
// with it. After waiting for the lock, PostgreSQL reads the row's newest version, so the
// status read is the one the record's update replaces, as when it was read after the lock.
// The owner's secrets revision is read, not locked: a bump is not held back by a record.
const (
	lockRecordSQL = `WITH c AS MATERIALIZED (
		SELECT id, owner_id, execution_status FROM conversations WHERE id = $1 FOR NO KEY UPDATE)
	SELECT execution_status, NULL::text,
		coalesce((SELECT rev FROM secret_revisions WHERE user_id = c.owner_id), 0) FROM c`
	lockRecordHeldSQL = `WITH c AS MATERIALIZED (
		SELECT id, owner_id, execution_status FROM conversations WHERE id = $1 FOR NO KEY UPDATE)
	SELECT execution_status,
		(SELECT holder FROM conversation_leases WHERE conversation_id = c.id FOR SHARE),
		coalesce((SELECT rev FROM secret_revisions WHERE user_id = c.owner_id), 0) FROM c`
)

// queueLock queues the statement that takes the row lock of a conversation and, in the same
// round trip, reads what the conditions of u need; readLock reads its result and checks
// them: with u.Holder, that holder has the conversation's lease, whose row stays locked (FOR
// SHARE) until the record commits, so that a claim by another replica waits for it and
// reads the log with the record in it (conversation.ErrLeaseLost otherwise); with
// u.IfStatus, that the agent's status is still *u.IfStatus (conversation.ErrStatusChanged
// otherwise); with u.IfSecretsRevision, that the owner's secrets revision is still
// *u.IfSecretsRevision (conversation.ErrSecretsRevised otherwise); conversation.ErrNotFound
// when the conversation does not exist.
func queueLock(b *pgx.Batch, id string, u conversation.StateUpdate) {
	q := lockRecordSQL
	if u.Holder != "" {
		q = lockRecordHeldSQL
	}
	b.Queue(q, id)
}

func readLock(br pgx.BatchResults, u conversation.StateUpdate) error {
	var status string
	var holder *string
	var rev int64
	err := br.QueryRow().Scan(&status, &holder, &rev)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return conversation.ErrNotFound
	case err != nil:
		return err
	case u.Holder != "" && (holder == nil || *holder != u.Holder):
		return conversation.ErrLeaseLost
	case u.IfStatus != nil && status != *u.IfStatus:
		return conversation.ErrStatusChanged
	case u.IfSecretsRevision != nil && *u.IfSecretsRevision != rev:
		return conversation.ErrSecretsRevised
	}
	return nil
}

// insertEventSQL takes the event's owner from its conversation's row, which a statement
// before it in the same batch may have inserted or locked.
const insertEventSQL = `INSERT INTO events (id, conversation_id, owner_id, kind, source, ts, body, llm_text, body_fold)
	VALUES ($1, $2, (SELECT owner_id FROM conversations WHERE id = $2), $3, $4, $5, $6, $7, $8) RETURNING seq`

// queueEvents queues the inserts of evs in b, in order.
func queueEvents(b *pgx.Batch, evs []event.Event) error {
	for _, e := range evs {
		if err := checkTimes(e.Timestamp); err != nil {
			return fmt.Errorf("event %s: %w", e.ID, err)
		}
		var llmText []byte
		if e.LLMText != "" {
			llmText = []byte(e.LLMText)
		}
		b.Queue(insertEventSQL, e.ID, e.ConversationID, e.Kind, e.Source, e.Timestamp,
			rawArg(e.Body), llmText, bodyFold(e))
	}
	return nil
}

// readEvents reads the results of the inserts queueEvents queued, in order: the events'
// sequence numbers.
func readEvents(br pgx.BatchResults, evs []event.Event) ([]int64, error) {
	seqs := make([]int64, len(evs))
	for i, e := range evs {
		err := br.QueryRow().Scan(&seqs[i])
		switch {
		case isUnique(err):
			return nil, fmt.Errorf("event %s already exists", e.ID)
		case isForeignKey(err), isNullIn(err, "owner_id"): // no conversation, so no owner
			return nil, fmt.Errorf("event %s: conversation %s: %w", e.ID, e.ConversationID, conversation.ErrNotFound)
		case err != nil:
			return nil, fmt.Errorf("event %s: %w", e.ID, err)
		}
	}
	return seqs, nil
}

// insertEvents inserts evs in order, in tx, in one round trip, and returns their sequence
// numbers. The caller holds the locks of their conversations (lockConversations).
func insertEvents(ctx context.Context, tx pgx.Tx, evs []event.Event) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	var b pgx.Batch
	if err := queueEvents(&b, evs); err != nil {
		return nil, err
	}
	convs := conversationsOf(evs)
	for _, id := range convs {
		queueNotify(&b, id)
	}
	br := tx.SendBatch(ctx, &b)
	seqs, err := readEvents(br, evs)
	if err == nil {
		err = readNotify(br, len(convs))
	}
	return seqs, errors.Join(err, br.Close())
}

// EventsChannel is the channel of the notifications that a conversation's log grew: each
// transaction that appends to a log notifies "e <conversation id> <its last Seq>", which
// PostgreSQL delivers when, and only if, the transaction commits, in the order of commits
// (Bus listens).
const EventsChannel = "agentd_events"

// queueNotify queues the notification that conversation id's log grew, with the Seq of its
// last event as the statement sees it (after the inserts queued before it).
func queueNotify(b *pgx.Batch, id string) {
	b.Queue(`SELECT pg_notify('`+EventsChannel+`', 'e ' || $1::text || ' ' || (SELECT max(seq) FROM events WHERE conversation_id = $1)::text)`, id)
}

// readNotify reads the results of n notifications queueNotify queued.
func readNotify(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("notify the appends: %w", err)
		}
	}
	return nil
}

// conversationsOf returns the ids of the conversations of evs, each once, sorted.
func conversationsOf(evs []event.Event) []string {
	ids := make([]string, 0, 1)
	for _, e := range evs {
		ids = append(ids, e.ConversationID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// bodyFold is what a body filter searches of e: event.BodyText in lower case, as the SQLite
// store computes it when it searches (Go's folding, beyond ASCII), computed here once when
// the event is stored; NULL for kinds other than messages, which never match. PostgreSQL
// text holds no NUL character, which a message's JSON may encode (\u0000): it goes.
func bodyFold(e event.Event) *string {
	if e.Kind != event.KindMessage {
		return nil
	}
	fold := strings.ReplaceAll(strings.ToLower(event.BodyText(e.Kind, e.Body)), "\x00", "")
	return &fold
}

const eventSelect = `SELECT e.seq, e.id, e.conversation_id, e.kind, e.source, e.ts, e.body, e.llm_text FROM events e`

func scanEvent(row pgx.Row) (event.Event, error) {
	var e event.Event
	var body *string
	var text []byte
	if err := row.Scan(&e.Seq, &e.ID, &e.ConversationID, &e.Kind, &e.Source, &e.Timestamp, &body, &text); err != nil {
		return event.Event{}, err
	}
	e.Body = fromRaw(body)
	e.LLMText = string(text)
	return e, nil
}

func eventWhere(ownerID string, f event.Filter) where {
	var w where
	if f.ConversationID != "" {
		// One conversation's events are read through its own index, its owner checked once
		// on the conversation rather than on each event.
		conv := w.arg(f.ConversationID)
		w.add("e.conversation_id = " + conv)
		w.add("EXISTS (SELECT 1 FROM conversations c WHERE c.id = " + conv + " AND c.owner_id = " + w.arg(ownerID) + ")")
	} else {
		w.add("e.owner_id = " + w.arg(ownerID))
	}
	if f.AfterSeq > 0 {
		w.add("e.seq > " + w.arg(f.AfterSeq))
	}
	if f.Kind != "" {
		w.add("e.kind = " + w.arg(f.Kind))
	}
	if f.Source != "" {
		w.add("e.source = " + w.arg(f.Source))
	}
	if f.TimestampGTE != nil {
		w.add("e.ts >= " + w.arg(timeArg(*f.TimestampGTE)))
	}
	if f.TimestampLT != nil {
		w.add("e.ts < " + w.arg(timeArg(*f.TimestampLT)))
	}
	if f.Body != "" {
		// strpos matches a plain substring: '%' and '_' are literal.
		w.add("e.kind = " + w.arg(event.KindMessage) + " AND strpos(e.body_fold, " + w.arg(strings.ToLower(f.Body)) + ") > 0")
	}
	return w
}

// SearchEvents pages by Seq: the cursor's key is the last Seq seen (and its id the event's).
func (s *Store) SearchEvents(ctx context.Context, ownerID string, f event.Filter, desc bool, q paging.Query) ([]event.Event, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("search events: %w", err)
	}
	w := eventWhere(ownerID, f)
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	if c != nil {
		if desc {
			w.add("e.seq < " + w.arg(c.key))
		} else {
			w.add("e.seq > " + w.arg(c.key))
		}
	}
	// The page's sequence numbers first (from an index alone, for one conversation or all of
	// an owner's events), then the events the cache does not hold: stored events never change.
	seqs, err := readSeqs(ctx, s, `SELECT e.seq FROM events e`+w.String()+` ORDER BY e.seq`+dir+limit(q.Limit+1), w.args, q.Limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("search events: %w", err)
	}
	evs, err := at(ctx, s, listedEvents, seqs)
	if err != nil {
		return nil, "", fmt.Errorf("search events: %w", err)
	}
	evs, next := page(evs, q.Limit, func(e event.Event) (int64, string) { return e.Seq, e.ID })
	return evs, next, nil
}

func (s *Store) CountEvents(ctx context.Context, ownerID string, f event.Filter) (int, error) {
	w := eventWhere(ownerID, f)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM events e`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}

func (s *Store) GetEvents(ctx context.Context, ownerID string, ids []string) ([]*event.Event, error) {
	out := make([]*event.Event, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	evs, err := collect(ctx, s.pool, scanEvent, eventSelect+` WHERE e.owner_id = $1 AND e.id = ANY($2)`, ownerID, ids)
	if err != nil {
		return nil, fmt.Errorf("get events: %w", err)
	}
	found := make(map[string]*event.Event, len(evs))
	for i := range evs {
		found[evs[i].ID] = &evs[i]
	}
	for i, id := range ids {
		if e := found[id]; e != nil {
			// A copy per position, so that callers may change one without the other when an
			// id is asked twice.
			c := *e
			out[i] = &c
		}
	}
	return out, nil
}

// ConversationEvents reads the log of one conversation after a position, for its agent loop.
func (s *Store) ConversationEvents(ctx context.Context, conversationID string, afterSeq int64) ([]event.Event, error) {
	evs, err := collect(ctx, s.pool, scanEvent,
		eventSelect+` WHERE e.conversation_id = $1 AND e.seq > $2 ORDER BY e.seq`, conversationID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("conversation %s events: %w", conversationID, err)
	}
	return evs, nil
}
