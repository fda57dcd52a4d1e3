package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestKeyCache: a replica keeps the API keys it found while its bus listens, and forgets a
// key deleted through another replica when that replica's notification comes (the cache's
// time to live is an hour here, so nothing else can make it forget); it keeps none while it
// does not listen, and none it had before its listening connection broke; a store without a
// bus keeps none.
func TestKeyCache(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Database(t)
	openCached := func() *postgres.Store {
		s, err := postgres.Open(ctx, url, postgres.Options{KeyCacheTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openCached(), openCached()
	newBus(t, a)
	bbus := newBus(t, b)
	bare := openCached() // no bus
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	u := auth.User{ID: "u1", Name: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if err := a.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	n := 0
	newKey := func() auth.APIKey {
		n++
		k := auth.APIKey{ID: fmt.Sprint("k", n), UserID: u.ID, Name: "key", Prefix: "agd_x", Hash: auth.Hash(fmt.Sprint("key-", n)),
			CreatedAt: u.CreatedAt}
		if err := a.CreateAPIKey(ctx, k, auth.MaxKeysPerUser); err != nil {
			t.Fatal(err)
		}
		return k
	}
	found := func(s *postgres.Store, k auth.APIKey) bool {
		t.Helper()
		got, gu, err := s.LookupAPIKey(ctx, k.Hash)
		if errors.Is(err, auth.ErrNotFound) {
			return false
		}
		if err != nil || got.ID != k.ID || gu.ID != u.ID || gu.Name != u.Name {
			t.Fatalf("look up %s: %+v %+v %v", k.ID, got, gu, err)
		}
		return true
	}
	deleteBehindTheBack := func(k auth.APIKey) {
		t.Helper()
		if _, err := admin.Exec(ctx, `DELETE FROM api_keys WHERE id = $1`, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	waitGone := func(s *postgres.Store, k auth.APIKey, what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for found(s, k) {
			if time.Now().After(deadline) {
				t.Fatalf("a minute after %s, the key still works", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Kept: a key deleted without a notification still works on the replica that found it,
	// and not on the store without a bus.
	k1 := newKey()
	if !found(b, k1) || !found(bare, k1) {
		t.Fatal("a new key is not found")
	}
	deleteBehindTheBack(k1)
	if !found(b, k1) {
		t.Fatal("the replica that found the key read it again: it keeps no key")
	}
	if found(bare, k1) {
		t.Fatal("a store without a bus kept the key")
	}

	// Deleted through a replica: gone there at once, and on the other once it hears of it.
	k2 := newKey()
	if !found(a, k2) || !found(b, k2) {
		t.Fatal("a new key is not found")
	}
	if err := a.DeleteAPIKey(ctx, u.ID, k2.ID); err != nil {
		t.Fatal(err)
	}
	if found(a, k2) {
		t.Fatal("the replica that deleted the key still takes it")
	}
	waitGone(b, k2, "its deletion through another replica")

	// A broken listening connection: what was kept is forgotten, as deletions may be
	// missed until the replica listens again.
	k3 := newKey()
	if !found(b, k3) {
		t.Fatal("a new key is not found")
	}
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+postgres.EventsChannel+`' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 2 {
		t.Fatalf("closed %d listening connections, want the two replicas'", killed)
	}
	deleteBehindTheBack(k3)
	waitGone(b, k3, "its replica's listening connection broke")
	waitListening(t, bbus, time.Minute)
	if found(b, k3) {
		t.Fatal("listening again, the replica takes a key it kept from before")
	}
	k4 := newKey()
	if !found(b, k4) {
		t.Fatal("a new key is not found")
	}
	deleteBehindTheBack(k4)
	if !found(b, k4) {
		t.Fatal("listening again, the replica keeps no key")
	}
}
