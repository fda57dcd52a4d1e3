package sqlite

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

// TestKeysAreReadAgainAfterACommit: a key checked again while nothing was committed is not
// read again (once the writer was quiet between two checks); a key deleted, by this store or
// by another connection on the same file, is not found at the next check; a key not found is
// never kept.
func TestKeysAreReadAgainAfterACommit(t *testing.T) {
	ctx := t.Context()
	reads := &rowReads{column: "FROM api_keys k JOIN users u"}
	s, t0 := storeWithConversations(t, Options{trace: reads.trace}, "c1")
	keys := make([]auth.APIKey, 3)
	for i := range keys {
		keys[i] = auth.APIKey{ID: fmt.Sprint("k", i), UserID: "u1", Name: fmt.Sprint("key ", i), Prefix: "ak_",
			Hash: []byte(fmt.Sprint("hash ", i)), CreatedAt: t0}
		if err := s.CreateAPIKey(ctx, keys[i], auth.MaxKeysPerUser); err != nil {
			t.Fatal(err)
		}
	}
	check := func(i int) error {
		t.Helper()
		k, u, err := s.LookupAPIKey(ctx, keys[i].Hash)
		if err == nil && (k.ID != keys[i].ID || u.ID != "u1" || u.Name != "alice" || !k.CreatedAt.Equal(t0)) {
			t.Fatalf("key %d: %+v of %+v", i, k, u)
		}
		return err
	}
	// Right after the writer's commits, a check reads and keeps nothing; the next keeps.
	for range 4 {
		if err := check(0); err != nil {
			t.Fatal(err)
		}
	}
	if reads.count() != 2 {
		t.Fatalf("four checks of a key read it %d times, want 2", reads.count())
	}
	for range 2 {
		if _, _, err := s.LookupAPIKey(ctx, []byte("no such hash")); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("an unknown key: %v", err)
		}
	}
	if reads.count() != 4 {
		t.Fatalf("an unknown key checked twice: keys read %d times in all, want 4", reads.count())
	}

	other, err := Open(ctx, s.path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i, by := range []struct {
		name  string
		store *Store
	}{{"the store itself", s}, {"another connection", other}} {
		key := i + 1
		if err := check(key); err != nil {
			t.Fatal(err)
		}
		if err := by.store.DeleteAPIKey(ctx, "u1", keys[key].ID); err != nil {
			t.Fatal(err)
		}
		if err := check(key); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("a key deleted by %s: %v", by.name, err)
		}
	}
	// A commit on another table is a commit too: the key still holding is read again, and
	// kept from the second check on.
	rename(t, s, "renamed at "+time.Now().String())
	before := reads.count()
	for range 3 {
		if err := check(0); err != nil {
			t.Fatal(err)
		}
	}
	if reads.count() != before+2 {
		t.Fatalf("after a commit, three checks read the key %d times, want 2", reads.count()-before)
	}

	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	if err := check(0); err != nil || reads.count() != before+3 {
		t.Fatalf("after ReleaseMemory: %v, keys read %d times, want %d", err, reads.count(), before+3)
	}
}
