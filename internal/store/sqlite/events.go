package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// Seq is the rowid of events, AUTOINCREMENT so that it never goes back, even after the newest
// events are deleted. All writes go through one connection, so a later append always gets
// greater numbers. Event reads are scoped by owner_id, the owner of the event's conversation,
// written with the event.

// AppendEvents inserts evs in one transaction, in order. Seq is set on the elements only once
// the transaction has committed. Appending to a conversation that does not exist fails with
// conversation.ErrNotFound.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		seqs, err = s.insertEvents(ctx, tx, evs)
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

// insertEvents inserts evs in order, in tx, and returns their sequence numbers.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, evs []event.Event) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	stmt, err := s.w.prepareIn(ctx, tx,
		`INSERT INTO events (id, conversation_id, kind, source, ts, body, llm_text, owner_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT owner_id FROM conversations WHERE id = ?))`)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	seqs := make([]int64, len(evs))
	for i, e := range evs {
		if err := checkTimes(e.Timestamp); err != nil {
			return nil, fmt.Errorf("event %s: %w", e.ID, err)
		}
		res, err := stmt.ExecContext(ctx, e.ID, e.ConversationID, e.Kind, e.Source, nanos(e.Timestamp), rawArg(e.Body), nullString(e.LLMText), e.ConversationID)
		switch {
		case isForeignKey(err):
			return nil, fmt.Errorf("event %s: conversation %s: %w", e.ID, e.ConversationID, conversation.ErrNotFound)
		case isUnique(err):
			return nil, fmt.Errorf("event %s already exists", e.ID)
		case err != nil:
			return nil, fmt.Errorf("event %s: %w", e.ID, err)
		}
		if seqs[i], err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

const eventSelect = `SELECT e.seq, e.id, e.conversation_id, e.kind, e.source, e.ts, e.body, e.llm_text
FROM events e`

func scanEvent(sc scanner) (event.Event, error) {
	var e event.Event
	var ts int64
	var body, text sql.NullString
	if err := sc.Scan(&e.Seq, &e.ID, &e.ConversationID, &e.Kind, &e.Source, &ts, &body, &text); err != nil {
		return event.Event{}, err
	}
	e.Timestamp = fromNanos(ts)
	e.Body = fromRaw(body)
	e.LLMText = text.String
	return e, nil
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func eventWhere(ownerID string, f event.Filter) where {
	var w where
	if f.ConversationID != "" {
		// One conversation's events are read through its own index, its owner checked once
		// on the conversation rather than on each event: a listing of its sequence numbers
		// alone then reads the index only.
		w.add("e.conversation_id = ?", f.ConversationID)
		w.add("EXISTS (SELECT 1 FROM conversations c WHERE c.id = ? AND c.owner_id = ?)", f.ConversationID, ownerID)
	} else {
		w.add("e.owner_id = ?", ownerID)
	}
	if f.AfterSeq > 0 {
		w.add("e.seq > ?", f.AfterSeq)
	}
	if f.Kind != "" {
		w.add("e.kind = ?", f.Kind)
	}
	if f.Source != "" {
		w.add("e.source = ?", f.Source)
	}
	if f.TimestampGTE != nil {
		w.add("e.ts >= ?", nanos(*f.TimestampGTE))
	}
	if f.TimestampLT != nil {
		w.add("e.ts < ?", nanos(*f.TimestampLT))
	}
	if f.Body != "" {
		w.add("e.kind = ? AND instr("+bodyTextFunc+"(e.kind, e.body), ?) > 0", event.KindMessage, strings.ToLower(f.Body))
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
	if c != nil {
		if desc {
			w.add("e.seq < ?", c.key)
		} else {
			w.add("e.seq > ?", c.key)
		}
	}
	if desc {
		dir = " DESC"
	}
	// The page's sequence numbers first, then the events the cache does not hold.
	seqs, err := pageVersions(ctx, s, scanSeq, `SELECT e.seq FROM events e`+w.String()+` ORDER BY e.seq`+dir, w.args, q.Limit+1)
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

func scanSeq(sc scanner) (listingcache.Version[int64], error) {
	var v listingcache.Version[int64]
	err := sc.Scan(&v.Key)
	return v, err
}

func (s *Store) CountEvents(ctx context.Context, ownerID string, f event.Filter) (int, error) {
	w := eventWhere(ownerID, f)
	var n int
	err := s.r.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM events e`+w.String(), w.args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}

func (s *Store) GetEvents(ctx context.Context, ownerID string, ids []string) ([]*event.Event, error) {
	list, err := listArg(ids)
	var evs []event.Event // by the ids' index (the unary + keeps the owner's from being chosen)
	if err == nil {
		evs, err = collect(ctx, s.r, scanEvent, eventSelect+` WHERE e.id`+inList+` AND +e.owner_id = ?`, list, ownerID)
	}
	if err != nil {
		return nil, fmt.Errorf("get events: %w", err)
	}
	found := make(map[string]*event.Event, len(evs))
	for _, e := range evs {
		found[e.ID] = &e
	}
	out := make([]*event.Event, len(ids))
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
	evs, err := collect(ctx, s.r, scanEvent,
		eventSelect+` WHERE e.conversation_id = ? AND e.seq > ? ORDER BY e.seq`, conversationID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("conversation %s events: %w", conversationID, err)
	}
	return evs, nil
}
