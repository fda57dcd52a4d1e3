package storetest

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// CopyFactory makes the stores that RunCopy copies between: the source is dumped, the target
// restored into. Both must be store.Dumper and store.Restorer.
type CopyFactory struct {
	// Source returns a new, empty store for one subtest and arranges, with t.Cleanup, for it
	// to be closed. Subtests run in parallel, so it is called concurrently.
	Source func(t *testing.T) store.Store
	// Target is Source for the store restored into.
	Target func(t *testing.T) store.Store
}

// RunCopy checks store.Copy from the factory's source to its target: everything the source
// holds reads the same from the target afterwards, through every read of the interface; the
// target's Seq counters carry on past the source's; and a restore into a store that is not
// empty, or one that fails half-way, leaves the target as it was.
func RunCopy(t *testing.T, f CopyFactory) {
	if f.Source == nil || f.Target == nil {
		t.Fatal("storetest: CopyFactory needs Source and Target")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, src, dst store.Store)
	}{
		{"RoundTrip", testCopyRoundTrip},
		{"CountersCarryOn", testCopyCountersCarryOn},
		{"EmptySource", testCopyEmptySource},
		{"NotEmpty", testCopyNotEmpty},
		{"BadRow", testCopyBadRow},
		{"UnknownColumn", testCopyUnknownColumn},
		{"Canceled", testCopyCanceled},
		{"DumpFails", testCopyDumpFails},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f.Source(t), f.Target(t))
		})
	}
}

func dumper(t *testing.T, s store.Store) store.Dumper {
	t.Helper()
	d, ok := s.(store.Dumper)
	if !ok {
		t.Fatalf("%T is not a store.Dumper", s)
	}
	return d
}

func restorer(t *testing.T, s store.Store) store.Restorer {
	t.Helper()
	r, ok := s.(store.Restorer)
	if !ok {
		t.Fatalf("%T is not a store.Restorer", s)
	}
	return r
}

// dumpAll reads the whole dump of s.
func dumpAll(t *testing.T, s store.Store) []store.Row {
	t.Helper()
	var rows []store.Row
	ok(t, "dump", dumper(t, s).Dump(t.Context(), func(r store.Row) error {
		rows = append(rows, r)
		return nil
	}))
	return rows
}

// rowsOf yields rows, and then err if it is not nil.
func rowsOf(rows []store.Row, err error) iter.Seq2[store.Row, error] {
	return func(yield func(store.Row, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
		if err != nil {
			yield(store.Row{}, err)
		}
	}
}

// testCopyRoundTrip: a copy reads back, through every read of the interface, as the source
// does, to the byte; the tally counts every row of every table, in the dump's order.
func testCopyRoundTrip(t *testing.T, src, dst store.Store) {
	w := fillCopyWorld(t, src)
	want := snapshotCopyWorld(t, src, w)
	rows := dumpAll(t, src)
	tally, err := store.Copy(t.Context(), restorer(t, dst), dumper(t, src))
	ok(t, "copy", err)
	same(t, "the copy", snapshotCopyWorld(t, dst, w), want)
	same(t, "the source after the copy", snapshotCopyWorld(t, src, w), want)

	// The tally: each table once, in the dump's order, with as many rows as the dump has.
	var wantTally []store.TableRows
	seqRows := 0
	for _, r := range rows {
		if r.Table == store.SeqTable {
			seqRows++
			continue
		}
		if n := len(wantTally); n == 0 || wantTally[n-1].Table != r.Table {
			for _, tr := range wantTally {
				if tr.Table == r.Table {
					t.Fatalf("the dump has rows of %s in two places", r.Table)
				}
			}
			wantTally = append(wantTally, store.TableRows{Table: r.Table})
		}
		wantTally[len(wantTally)-1].Rows++
	}
	equal(t, "tally", tally, wantTally)
	if seqRows == 0 || rows[len(rows)-1].Table != store.SeqTable {
		t.Fatalf("the dump does not end with the Seq counters (%d rows of them)", seqRows)
	}
	// The copy dumps as the source does: every column of every row, in the same order (the
	// columns one store keeps and the other does not aside).
	again := dumpAll(t, dst)
	if len(again) != len(rows) {
		t.Fatalf("the copy dumps %d rows, the source %d", len(again), len(rows))
	}
	for i := range rows {
		a, b := rows[i], again[i]
		if a.Table != b.Table {
			t.Fatalf("row %d: table %s in the copy's dump, %s in the source's", i, b.Table, a.Table)
		}
		for col, v := range a.Cols {
			w, ok := b.Cols[col]
			if !ok {
				continue // a column the target does not keep (a listing counter)
			}
			equal(t, a.Table+"."+col, w, v)
		}
	}
}

// testCopyCountersCarryOn: the Seq of an event appended to a copied conversation is greater
// than every Seq the source handed out, those of events deleted since included; a message
// queued behind copied ones comes after them.
func testCopyCountersCarryOn(t *testing.T, src, dst store.Store) {
	ctx := t.Context()
	w := fillCopyWorld(t, src)
	_, err := store.Copy(ctx, restorer(t, dst), dumper(t, src))
	ok(t, "copy", err)
	before, err := dst.ConversationEvents(ctx, "conv-1", 0)
	ok(t, "events of conv-1", err)
	evs := []event.Event{newEvent("conv-1", "ev-after-copy", 9)}
	ok(t, "append after the copy", dst.AppendEvents(ctx, evs))
	if evs[0].Seq <= w.lastSeq {
		t.Fatalf("the Seq after the copy is %d, not past the source's last %d", evs[0].Seq, w.lastSeq)
	}
	after, err := dst.ConversationEvents(ctx, "conv-1", 0)
	ok(t, "events of conv-1", err)
	equal(t, "the log after an append", after, append(before, evs[0]))

	_, err = dst.AddPendingMessage(ctx, ownerB, conversation.PendingMessage{ID: "pm-after-copy", ConversationID: "conv-3",
		Message: conversation.Message{Text: "later"}, CreatedAt: at(9)}, 10)
	ok(t, "queue after the copy", err)
	pms, err := dst.PendingMessages(ctx, "conv-3")
	ok(t, "pending messages", err)
	equal(t, "the queue", ids(pms, func(m conversation.PendingMessage) string { return m.ID }), []string{"pm-3", "pm-after-copy"})
}

// testCopyEmptySource: an empty store copies as nothing, and the target stays usable.
func testCopyEmptySource(t *testing.T, src, dst store.Store) {
	ctx := t.Context()
	tally, err := store.Copy(ctx, restorer(t, dst), dumper(t, src))
	ok(t, "copy", err)
	if len(tally) != 0 {
		t.Fatalf("an empty store copied as %v", tally)
	}
	created, err := dst.Bootstrap(ctx, newUser(ownerA, 1), newAPIKey("key-a", ownerA, 1))
	ok(t, "bootstrap the copy", err)
	if !created {
		t.Fatal("the copy of an empty store has a user")
	}
}

// testCopyNotEmpty: a target that holds anything is refused with ErrNotEmpty, and left as
// it was; that of a server that started once (its first admin) too.
func testCopyNotEmpty(t *testing.T, src, dst store.Store) {
	ctx := t.Context()
	w := fillCopyWorld(t, src)
	_, err := dst.Bootstrap(ctx, newUser("admin", 1), newAPIKey("key-admin", "admin", 1))
	ok(t, "bootstrap the target", err)
	before := snapshotCopyWorld(t, dst, copyWorld{owners: []string{"admin"}})
	_, err = store.Copy(ctx, restorer(t, dst), dumper(t, src))
	is(t, "copy into a store with a user", err, store.ErrNotEmpty)
	same(t, "the target after a refused copy", snapshotCopyWorld(t, dst, copyWorld{owners: []string{"admin"}}), before)
	for id, o := range w.conversations {
		_, err := dst.GetConversation(ctx, o, id)
		is(t, "a conversation of a refused copy", err, conversation.ErrNotFound)
	}
}

// assertEmpty fails unless s reads as empty, and then proves that it is by restoring into it.
func assertEmpty(t *testing.T, s store.Store, rows []store.Row) {
	t.Helper()
	ctx := t.Context()
	users, _, err := s.ListUsers(ctx, paging.Query{})
	ok(t, "list users", err)
	sbs, err := s.AllSandboxes(ctx)
	ok(t, "all sandboxes", err)
	pending, err := s.PendingStartTasks(ctx)
	ok(t, "pending tasks", err)
	if len(users)+len(sbs)+len(pending) > 0 {
		t.Fatalf("the target kept %d users, %d sandboxes and %d start tasks of a failed restore", len(users), len(sbs), len(pending))
	}
	ok(t, "restore into the target afterwards", restorer(t, s).Restore(ctx, rowsOf(rows, nil)))
}

// testCopyBadRow: a row that breaks a constraint, after every good one, fails the restore,
// which leaves nothing behind.
func testCopyBadRow(t *testing.T, src, dst store.Store) {
	fillCopyWorld(t, src)
	rows := dumpAll(t, src)
	bad := store.Row{Table: "events", Cols: map[string]any{}}
	for _, r := range rows {
		if r.Table == "events" {
			for k, v := range r.Cols {
				bad.Cols[k] = v
			}
		}
	}
	bad.Cols["conversation_id"] = "no-such-conversation"
	bad.Cols["id"], bad.Cols["seq"] = "ev-orphan", bad.Cols["seq"].(int64)+100
	fails(t, "restore with an orphan event", restorer(t, dst).Restore(t.Context(), rowsOf(append(rows, bad), nil)))
	assertEmpty(t, dst, rows)
}

// testCopyUnknownColumn: a row with a column the target neither keeps nor knows to drop, or
// of a table it does not have, fails the restore rather than losing the value.
func testCopyUnknownColumn(t *testing.T, src, dst store.Store) {
	fillCopyWorld(t, src)
	rows := dumpAll(t, src)
	for _, bad := range []store.Row{
		{Table: "users", Cols: map[string]any{"id": "u", "name": "u", "is_admin": false, "created_at": at(1), "shoe_size": int64(44)}},
		{Table: "no_such_table", Cols: map[string]any{"id": "x"}},
	} {
		in := append(rows[:len(rows):len(rows)], bad)
		fails(t, "restore a row of "+bad.Table, restorer(t, dst).Restore(t.Context(), rowsOf(in, nil)))
	}
	assertEmpty(t, dst, rows)
}

// testCopyCanceled: a restore whose context ends half-way leaves nothing behind.
func testCopyCanceled(t *testing.T, src, dst store.Store) {
	fillCopyWorld(t, src)
	rows := dumpAll(t, src)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	half := func(yield func(store.Row, error) bool) {
		for i, r := range rows {
			if i == len(rows)/2 {
				cancel()
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	err := restorer(t, dst).Restore(ctx, half)
	is(t, "restore canceled half-way", err, context.Canceled)
	assertEmpty(t, dst, rows)
}

// testCopyDumpFails: an error that the rows yield half-way (the dump failed) fails the
// restore with it, and leaves nothing behind.
func testCopyDumpFails(t *testing.T, src, dst store.Store) {
	fillCopyWorld(t, src)
	rows := dumpAll(t, src)
	boom := errors.New("the source went away")
	err := restorer(t, dst).Restore(t.Context(), rowsOf(rows[:len(rows)/2], boom))
	is(t, "restore of a dump that failed", err, boom)
	assertEmpty(t, dst, rows)
}
