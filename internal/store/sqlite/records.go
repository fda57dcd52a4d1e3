package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// Group commit of RecordEvents. Every agent step appends its events through RecordEvents, and
// the store has one writer: with many conversations running at once, their appends queue for
// it, and each commit writes its pages to the WAL (two writes per page) whatever it holds. So
// the appends that arrive while one transaction is being written are written together, in the
// next one, each in its own savepoint: many conversations' steps cost one commit, and an
// append that fails (its conversation was deleted meanwhile) fails alone. Each caller still
// returns once its events are committed, or with the reason they are not there.

// maxRecordBatch bounds the appends one transaction writes, so that the first of a long queue
// does not wait for the last.
const maxRecordBatch = 64

// records is the queue of appends waiting for the writer.
type records struct {
	mu    sync.Mutex
	queue []*recordReq
	// writing: a caller leads the queue, writing batches until it hands over.
	writing bool
}

// recordReq is one RecordEvents call.
type recordReq struct {
	ctx            context.Context
	conversationID string
	evs            []event.Event
	u              conversation.StateUpdate

	seqs []int64
	prev int64
	err  error
	// wake is closed once the request is written (done), or when it is to lead the queue.
	wake chan struct{}
	lead bool
}

// record writes r, in a batch with whatever else is waiting, and returns once it is written.
func (s *Store) record(r *recordReq) {
	r.wake = make(chan struct{})
	q := &s.records
	q.mu.Lock()
	q.queue = append(q.queue, r)
	lead := !q.writing
	q.writing = true
	q.mu.Unlock()
	if !lead {
		// Once queued, the request is written or refused by whoever leads: it is not
		// abandoned when ctx ends, so that an append reported as failed never took effect.
		<-r.wake
		if !r.lead {
			return
		}
	}
	s.leadRecords()
}

// leadRecords writes one batch from the head of the queue (the leader's own request among
// it), then hands the lead to the first request still waiting, if any.
func (s *Store) leadRecords() {
	q := &s.records
	q.mu.Lock()
	n := min(len(q.queue), maxRecordBatch)
	batch := q.queue[:n:n]
	q.queue = q.queue[n:]
	q.mu.Unlock()
	for _, r := range batch {
		r.err = errNotWritten // until writeRecords says otherwise
	}
	// Handed over even if writing panics (a request's goroutine may recover), so that the
	// queue never stops.
	defer func() {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.queue = nil
			q.writing = false
		} else {
			next := q.queue[0]
			next.lead = true
			close(next.wake)
		}
		q.mu.Unlock()
		for _, r := range batch {
			if !r.lead {
				close(r.wake)
			}
		}
	}()
	s.writeRecords(batch)
}

// errNotWritten is the answer of a request whose batch stopped before it was written.
var errNotWritten = errors.New("the append was not written")

// writeRecords writes the batch in one transaction, each request in its own savepoint. A
// request whose context ended before its turn is refused with its context's error; one that
// fails is rolled back alone; a transaction that fails fails them all.
func (s *Store) writeRecords(batch []*recordReq) {
	// The transaction serves several callers: none of their contexts may cut it short.
	ctx := context.WithoutCancel(batch[0].ctx)
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, r := range batch {
			r.seqs, r.err = nil, r.ctx.Err()
			if r.err != nil {
				continue
			}
			if _, err := s.w.execIn(ctx, tx, `SAVEPOINT record`); err != nil {
				return err
			}
			r.seqs, r.prev, r.err = s.recordEvents(ctx, tx, r.conversationID, r.evs, r.u)
			if r.err != nil {
				r.seqs = nil
				if _, err := s.w.execIn(ctx, tx, `ROLLBACK TO record`); err != nil {
					return err
				}
			}
			if _, err := s.w.execIn(ctx, tx, `RELEASE record`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.seqs, r.err = nil, err
			}
		}
	}
}
