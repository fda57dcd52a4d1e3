package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// TestWritesRunPrepared: an append's statements are prepared once, on the writer's only
// connection, and every later append runs them from there; the first append, which finds
// nothing prepared while its transaction holds that connection, runs unprepared instead of
// waiting for the connection it holds.
func TestWritesRunPrepared(t *testing.T) {
	ctx := t.Context()
	s, now := storeWithConversations(t, Options{}, "c1")
	appendOne := func(i int) {
		t.Helper()
		ev := runningEvent(t, fmt.Sprintf("e%d", i), now)
		u := conversation.StateUpdate{ExecutionStatus: "running", Metrics: json.RawMessage(`{}`), UpdatedAt: now.Add(time.Duration(i))}
		if _, err := s.RecordEvents(ctx, "c1", []event.Event{ev}, u); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	appendOne(0)
	appendOne(1)
	held := map[string]*sql.Stmt{}
	s.w.mu.Lock()
	for q, st := range s.w.prepared {
		held[q] = st.st
	}
	s.w.mu.Unlock()
	if len(held) < 2 {
		t.Fatalf("the writer keeps %d statements prepared after two appends, want the INSERT and the UPDATE", len(held))
	}
	for i := 2; i < 10; i++ {
		appendOne(i)
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if len(s.w.prepared) != len(held) || len(s.w.noted) != 0 {
		t.Fatalf("the writer prepared %d statements, %d noted, after more appends of the same kind; it had %d", len(s.w.prepared), len(s.w.noted), len(held))
	}
	for q, st := range held {
		if c := s.w.prepared[q]; c == nil || c.st != st {
			t.Fatalf("statement %q was prepared again", q)
		}
	}
	evs, err := s.ConversationEvents(ctx, "c1", 0)
	if err != nil || len(evs) != 10 {
		t.Fatalf("the log holds %d events (%v), want 10", len(evs), err)
	}
}

// TestStatementsPreparedOnce: a single write outside a transaction runs from its prepared
// statement, prepared once; and a statement about a list of ids (events by their ids, the
// sub-conversations of a page, the sandboxes in use) is one prepared statement whatever the
// list's length, so that lists of many lengths do not fill the pools' bounded caches.
func TestStatementsPreparedOnce(t *testing.T) {
	ctx := t.Context()
	s, now := storeWithConversations(t, Options{}, "c1")
	sb := sandbox.Sandbox{ID: "sb1", OwnerID: "u1", Status: sandbox.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateSandbox(ctx, sb, 0); err != nil {
		t.Fatal(err)
	}
	counts := func() (readers, writer int) {
		s.r.mu.Lock()
		defer s.r.mu.Unlock()
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		return len(s.r.prepared), len(s.w.prepared)
	}
	flip := func() {
		t.Helper()
		from := sb.Status
		sb.Status = map[sandbox.Status]sandbox.Status{sandbox.StatusRunning: sandbox.StatusPaused, sandbox.StatusPaused: sandbox.StatusRunning}[from]
		if err := s.UpdateSandbox(ctx, sb, from); err != nil {
			t.Fatal(err)
		}
	}
	flip()
	_, w0 := counts()
	var held *sql.Stmt
	s.w.mu.Lock()
	for q, st := range s.w.prepared {
		if strings.HasPrefix(q, "UPDATE sandboxes SET status") {
			held = st.st
		}
	}
	s.w.mu.Unlock()
	if held == nil {
		t.Fatalf("a sandbox's update is not among the writer's %d prepared statements", w0)
	}
	for range 5 {
		flip()
	}
	if _, w := counts(); w != w0 {
		t.Fatalf("the writer has %d statements prepared after more updates of the same kind, had %d", w, w0)
	}

	lists := func(n int) {
		t.Helper()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("id-%d", i)
		}
		ids[0] = "sb1"
		evs, err := s.GetEvents(ctx, "u1", ids)
		if err != nil || len(evs) != n {
			t.Fatalf("get %d events: %d back, %v", n, len(evs), err)
		}
		if _, err := s.SubConversationIDs(ctx, "u1", ids); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchSandboxes(ctx, ids, now.Add(time.Duration(n)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	lists(1)
	r0, w0 := counts()
	for n := 2; n <= 40; n++ {
		lists(n)
	}
	if r, w := counts(); r != r0 || w != w0 {
		t.Fatalf("lists of 2 to 40 ids left %d statements prepared on the readers and %d on the writer; a list of 1 left %d and %d", r, w, r0, w0)
	}
	got, err := s.GetSandbox(ctx, "u1", "sb1")
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(40 * time.Second); !got.ActiveAt.Equal(want) {
		t.Fatalf("sandbox sb1 was last in use at %v, want %v", got.ActiveAt, want)
	}
}

// TestPreparedKeepsWhatIsUsed: a pool whose cache is full of statements run once puts out the
// one unused longest for a new one, so a statement run often keeps its place (and is not
// prepared again) however many others come; and statements put out while other callers run
// them are closed only after, so that no query fails for it.
func TestPreparedKeepsWhatIsUsed(t *testing.T) {
	ctx := t.Context()
	s, _ := storeWithConversations(t, Options{})
	const max = 8
	s.r.mu.Lock()
	s.r.max = max
	s.r.mu.Unlock()
	sum := func(query string, arg, want int) {
		t.Helper()
		var got int
		if err := s.r.QueryRowContext(ctx, query, arg).Scan(&got); err != nil || got != want {
			t.Fatalf("%s with %d: %d, %v; want %d", query, arg, got, err, want)
		}
	}
	for i := range max { // the cache full of statements run once
		sum(fmt.Sprintf("SELECT %d + ?", 1000+i), 1, 1001+i)
	}
	const hot = "SELECT 1 + ?"
	sum(hot, 1, 2)
	held := s.r.preparedOf(hot)
	if held == nil {
		t.Fatal("a statement met with the cache full was not prepared")
	}
	for i := range 100 {
		sum(fmt.Sprintf("SELECT %d + ?", i+2), 1, i+3)
		sum(hot, 2, 3)
	}
	s.r.mu.Lock()
	n := len(s.r.prepared)
	s.r.mu.Unlock()
	if n > max {
		t.Fatalf("the readers keep %d statements prepared, more than their %d", n, max)
	}
	if s.r.preparedOf(hot) != held {
		t.Fatal("the statement run after each of the others was put out of the cache, or prepared again")
	}

	// Callers that run statements the others put out meanwhile.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				k := (i*7 + g*13) % (3 * max)
				var got int
				if err := s.r.QueryRowContext(ctx, fmt.Sprintf("SELECT %d + ?", k), g).Scan(&got); err != nil || got != k+g {
					errs <- fmt.Errorf("SELECT %d + %d: %d, %v", k, g, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// preparedOf is the statement the pool keeps prepared for query, or nil.
func (r *pool) preparedOf(query string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.prepared[query]; c != nil {
		return c.st
	}
	return nil
}

// TestAppendsWaitingForTheWriterShareACommit: the appends that queue while the writer is busy
// are written together in the next transaction, one commit for all; the one to a missing
// conversation fails alone, the one whose context ended is refused, the others are stored.
func TestAppendsWaitingForTheWriterShareACommit(t *testing.T) {
	ctx := t.Context()
	log := &commitLog{}
	s, now := storeWithConversations(t, Options{Observer: log}, "c1", "c2", "c3")
	appendTo := func(ctx context.Context, conv string, ev event.Event) error {
		_, err := s.RecordEvents(ctx, conv, []event.Event{ev}, conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: now})
		return err
	}

	// The writer's only connection is busy: the first append leads, and waits for it.
	blocker, err := s.w.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.reset()
	results := map[string]chan error{}
	start := func(ctx context.Context, conv string) {
		ch := make(chan error, 1)
		results[conv] = ch
		ev := runningEvent(t, "e-"+conv, now)
		go func() { ch <- appendTo(ctx, conv, ev) }()
	}
	queued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s.records.mu.Lock()
			got, writing := len(s.records.queue), s.records.writing
			s.records.mu.Unlock()
			if got == n && writing {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d appends queued, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	start(ctx, "c1")
	queued(0) // c1 leads, with its batch taken
	start(ctx, "c2")
	start(ctx, "missing")
	canceled, cancel := context.WithCancel(ctx)
	start(canceled, "c3")
	queued(3)
	cancel()
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	for conv, want := range map[string]error{"c1": nil, "c2": nil, "missing": conversation.ErrNotFound, "c3": context.Canceled} {
		if err := <-results[conv]; !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("append to %s: %v, want %v", conv, err, want)
		}
	}
	if n := log.commits(); n != 2 {
		t.Errorf("%d commits, want 2: the first append's, then one for the three that waited", n)
	}
	for conv, want := range map[string]int{"c1": 1, "c2": 1, "c3": 0} {
		evs, err := s.ConversationEvents(ctx, conv, 0)
		if err != nil || len(evs) != want {
			t.Errorf("conversation %s holds %d events (%v), want %d", conv, len(evs), err, want)
		}
	}
	// The queue is free again.
	if err := appendTo(ctx, "c3", runningEvent(t, "e-c3", now)); err != nil {
		t.Fatal(err)
	}
}

// commitLog counts the writer's commits.
type commitLog struct {
	mu sync.Mutex
	n  int
}

func (l *commitLog) ObserveQuery(pool, statement string, _ time.Duration, failed bool) {
	if pool == PoolWrite && statement == "commit" && !failed {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
}

func (l *commitLog) reset() {
	l.mu.Lock()
	l.n = 0
	l.mu.Unlock()
}

func (l *commitLog) commits() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// runningEvent is an execution_status update to running, as an agent's run appends them.
func runningEvent(t *testing.T, id string, at time.Time) event.Event {
	t.Helper()
	ev, err := event.NewStateUpdate(id, at, event.StateExecutionStatus, "running")
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// storeWithConversations opens a store in a new directory, closed when the test ends, with
// one user and a conversation of each id; now is their creation time.
func storeWithConversations(t *testing.T, o Options, ids ...string) (*Store, time.Time) {
	t.Helper()
	ctx := t.Context()
	s, err := OpenWith(ctx, filepath.Join(t.TempDir(), "agentd.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Unix(1_700_000_000, 0).UTC()
	if err := s.CreateUser(ctx, auth.User{ID: "u1", Name: "alice", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		c := conversation.Conversation{ID: id, OwnerID: "u1", Version: conversation.V1, Title: id, CreatedAt: now, UpdatedAt: now}
		if err := s.CreateConversation(ctx, c, conversation.StartTask{}, nil, conversation.Claim{}); err != nil {
			t.Fatal(err)
		}
	}
	return s, now
}
