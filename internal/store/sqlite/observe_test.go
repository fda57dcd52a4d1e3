package sqlite_test

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// queryLog records what a store's observer is told.
type queryLog struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	pool, statement string
	failed          bool
}

func (l *queryLog) ObserveQuery(pool, statement string, d time.Duration, failed bool) {
	if d < 0 {
		panic("negative duration")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, observed{pool, statement, failed})
}

func (l *queryLog) take() []observed {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

func (l *queryLog) count(o observed) int {
	n := 0
	for _, s := range l.take() {
		if s == o {
			n++
		}
	}
	return n
}

// TestQueryObserver: every statement is reported with its pool and keyword, a transaction
// with its begin and commit, and a failed one as failed.
func TestQueryObserver(t *testing.T) {
	ctx := t.Context()
	log := &queryLog{}
	s, err := sqlite.OpenWith(ctx, filepath.Join(t.TempDir(), "agentd.db"), sqlite.Options{Observer: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log.take() // the migrations'

	u := auth.User{ID: "u1", Name: "alice", CreatedAt: time.Unix(1, 0).UTC()}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := log.take()
	want := map[observed]bool{{"write", "insert", false}: true}
	for _, o := range got {
		delete(want, o)
	}
	if len(want) > 0 {
		t.Fatalf("creating a user reported %v, without %v", got, want)
	}

	if _, err := s.GetUser(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if n := log.count(observed{"read", "select", false}); n != 1 {
		t.Fatalf("a get reported %d reads, want 1", n)
	}

	if err := s.CreateUser(ctx, u); err == nil {
		t.Fatal("a user created twice")
	}
	if n := log.count(observed{"write", "insert", true}); n != 1 {
		t.Fatalf("a failed insert was reported %d times as failed, want 1", n)
	}
	if _, err := s.GetUser(ctx, "nobody"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("get of a missing user: %v", err)
	}
	log.take()
	if _, err := s.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	if n := log.count(observed{"read", "select", false}); n != 2 {
		t.Fatalf("the counts reported %d reads, want 2", n)
	}
}
