package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// TestDataVersionSeesEveryCommit: the version stays while nothing is committed, and moves with
// a commit of this store's writer and with one of another connection on the same file, as of
// another process.
func TestDataVersionSeesEveryCommit(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{}, "c1")
	look := func() int64 {
		t.Helper()
		v, err := s.changes.current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v1 := look()
	if v2 := look(); v2 != v1 {
		t.Fatalf("the version moved from %d to %d without a commit", v1, v2)
	}
	rename(t, s, "renamed")
	v3 := look()
	if v3 == v1 {
		t.Fatal("the version did not move with a commit of the store's writer")
	}
	other, err := Open(ctx, s.path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rename(t, other, "renamed again")
	if v4 := look(); v4 == v3 {
		t.Fatal("the version did not move with a commit of another connection")
	}
}

// TestDataVersionIsNewOnANewConnection: after a failed look the next one is on a connection
// taken anew (a new one if the pool dropped the old, whose pragma counts from the start
// again); its versions are never those of the one before, so nothing kept as of those is
// taken as current.
func TestDataVersionIsNewOnANewConnection(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{}, "c1")
	seen := map[int64]bool{}
	for range 3 {
		v, err := s.changes.current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] {
			t.Fatalf("version %x seen on an earlier connection", v)
		}
		seen[v] = true
		s.changes.mu.Lock()
		s.changes.reset() // as after a failed look
		s.changes.mu.Unlock()
	}
}

// TestDataVersionHoldsNoSnapshot: a look leaves no read transaction open on its connection,
// which would keep a checkpoint from copying the frames committed after it (and the WAL from
// starting over).
func TestDataVersionHoldsNoSnapshot(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{}, "c1")
	if _, err := s.changes.current(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		rename(t, s, fmt.Sprint("title ", i))
	}
	var busy, frames, copied int64
	if err := s.r.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	if busy != 0 || frames == 0 || copied != frames {
		t.Fatalf("checkpoint: busy %d, %d frames, %d copied; want every frame copied", busy, frames, copied)
	}
}

// TestListedPagesAreKeptUntilACommit: a page listed again while nothing was committed reads
// neither its rows nor their versions; after a commit of another connection on the same file
// (as of another process) it reads the versions again and shows the change. Right after a
// commit of the store's own writer, a listing reads and keeps nothing (the writer is busy);
// the next one keeps its page again. Each page of a listing is kept apart, and with the cache
// off every listing reads its versions.
func TestListedPagesAreKeptUntilACommit(t *testing.T) {
	ctx := t.Context()
	versions := &rowReads{column: "rev FROM sandboxes WHERE owner_id"}
	s, t0 := storeWithConversations(t, Options{trace: versions.trace}, "c1")
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Second)
		sb := sandbox.Sandbox{ID: fmt.Sprint("sb", i), OwnerID: "u1", SpecID: "spec", Backend: "process", Status: sandbox.StatusRunning, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateSandbox(ctx, sb, 0); err != nil {
			t.Fatal(err)
		}
	}
	list := func(s *Store, cursor string) ([]sandbox.Sandbox, string) {
		t.Helper()
		sbs, next, err := s.ListSandboxes(ctx, "u1", paging.Query{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return sbs, next
	}
	reads := func(want int, after string) {
		t.Helper()
		if got := versions.count(); got != want {
			t.Fatalf("%s: versions read %d times in all, want %d", after, got, want)
		}
	}
	first, next := list(s, "") // right after the writer's commits: read, not kept
	second, _ := list(s, next) // read and kept
	if len(first) != 3 || len(second) != 2 || first[0].ID != "sb4" || second[1].ID != "sb0" {
		t.Fatalf("two pages: %d and %d sandboxes", len(first), len(second))
	}
	reads(2, "two pages")
	list(s, "") // read and kept
	reads(3, "the first page again")
	for range 3 {
		again, againNext := list(s, "")
		if len(again) != 3 || again[0].ID != "sb4" || againNext != next {
			t.Fatalf("listed again: %d sandboxes, next %q (first: next %q)", len(again), againNext, next)
		}
		if rest, _ := list(s, next); len(rest) != 2 || rest[0].ID != "sb1" {
			t.Fatalf("the second page listed again: %d sandboxes", len(rest))
		}
	}
	reads(3, "both pages listed three times more without a commit")

	// A commit of another connection, as of another process: a sandbox paused.
	other, err := Open(ctx, s.path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	paused := first[0]
	paused.Status = sandbox.StatusPaused
	if err := other.UpdateSandbox(ctx, paused, sandbox.StatusRunning); err != nil {
		t.Fatal(err)
	}
	if got, _ := list(s, ""); got[0].Status != sandbox.StatusPaused {
		t.Fatalf("after another connection's commit, the first sandbox is %s", got[0].Status)
	}
	reads(4, "another connection's commit")
	list(s, "")
	reads(4, "listed again after it")

	// A commit of this store's writer, on a table the listing does not show, still counts.
	rename(t, s, "renamed")
	list(s, "")
	list(s, "")
	list(s, "")
	reads(6, "the writer's commit and three listings")

	// A sandbox deleted by another connection is no longer listed.
	if err := other.DeleteSandbox(ctx, "sb4"); err != nil {
		t.Fatal(err)
	}
	if got, _ := list(s, ""); len(got) != 3 || got[0].ID != "sb3" {
		t.Fatalf("after a deletion: %d sandboxes, first %s", len(got), got[0].ID)
	}

	off := &rowReads{column: "rev FROM sandboxes WHERE owner_id"}
	uncached, err := OpenWith(ctx, s.path(t), Options{trace: off.trace, ListingCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer uncached.Close()
	list(uncached, "")
	list(uncached, "")
	list(uncached, "")
	if off.count() != 3 {
		t.Fatalf("with the cache off, three listings read versions %d times, want 3", off.count())
	}
}

// path is the file of s, for a second store on it.
func (s *Store) path(t *testing.T) string {
	t.Helper()
	var seq int
	var name, file string
	if err := s.r.QueryRowContext(t.Context(), "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(file)
}

// rename sets the title of conversation c1 of user u1: a commit.
func rename(t *testing.T, s *Store, title string) {
	t.Helper()
	if err := s.PatchConversation(t.Context(), "u1", "c1", conversation.Patch{Title: &title}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestListedEventPagesAreKeptUntilACommit: a page of events listed again while nothing was
// committed reads no sequence numbers (once the writer was quiet between two listings); an
// event appended since is listed at once.
func TestListedEventPagesAreKeptUntilACommit(t *testing.T) {
	ctx := t.Context()
	seqs := &rowReads{column: "SELECT e.seq FROM events e"}
	s, _ := storeWithConversations(t, Options{trace: seqs.trace}, "c1")
	appendNumbered(t, s, "c1", 5)
	search := func() []event.Event {
		t.Helper()
		evs, _, err := s.SearchEvents(ctx, "u1", event.Filter{ConversationID: "c1"}, true, paging.Query{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	search() // right after the writer's commit: read, not kept
	search() // read and kept
	if got := search(); len(got) != 5 || seqs.count() != 2 {
		t.Fatalf("listed three times: %d events, sequence numbers read %d times, want 5 and 2", len(got), seqs.count())
	}
	if err := s.AppendEvents(ctx, []event.Event{{ID: "late", ConversationID: "c1", Kind: "MessageEvent", Source: "user", Body: []byte(`{"id":"late"}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := search(); len(got) != 6 || got[0].ID != "late" || seqs.count() != 3 {
		t.Fatalf("after an append: %d events, newest %q, sequence numbers read %d times", len(got), got[0].ID, seqs.count())
	}
}
