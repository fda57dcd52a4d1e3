package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testUsers(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetUser(ctx, "nobody")
	is(t, "get missing user", err, auth.ErrNotFound)

	// u2 and u3 share a creation time: the id breaks the tie.
	users := []auth.User{newUser("u1", 1), newUser("u3", 2), newUser("u2", 2), newUser("u4", 3), newUser("u0", 4)}
	users[0].IsAdmin = true
	for _, u := range users {
		ok(t, "create user", s.CreateUser(ctx, u))
	}
	for _, u := range users {
		got, err := s.GetUser(ctx, u.ID)
		ok(t, "get user", err)
		equal(t, "user", got, u)
	}

	dupID := newUser("u1", 9)
	dupID.Name = "another name"
	is(t, "create user with a taken id", s.CreateUser(ctx, dupID), auth.ErrConflict)
	dupName := newUser("u9", 9)
	dupName.Name = users[1].Name
	is(t, "create user with a taken name", s.CreateUser(ctx, dupName), auth.ErrConflict)
	_, err = s.GetUser(ctx, "u9")
	is(t, "user whose create failed", err, auth.ErrNotFound)

	want := []auth.User{users[0], users[2], users[1], users[3], users[4]} // oldest first
	for _, limit := range []int{1, 2, 5, 100} {
		got, pages := allPages(t, limit, func(q paging.Query) ([]auth.User, string, error) {
			return s.ListUsers(ctx, q)
		})
		equal(t, fmt.Sprintf("users with limit %d", limit), got, want)
		if pages != pagesFor(len(want), limit) {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, pagesFor(len(want), limit))
		}
	}
}

func testAPIKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	ua, ub := newUser(ownerA, 1), newUser(ownerB, 2)
	ok(t, "create user A", s.CreateUser(ctx, ua))
	ok(t, "create user B", s.CreateUser(ctx, ub))

	is(t, "create key of a missing user", s.CreateAPIKey(ctx, newAPIKey("k0", "nobody", 1), auth.MaxKeysPerUser), auth.ErrNotFound)

	k1 := newAPIKey("k1", ownerA, 3)
	k2 := newAPIKey("k2", ownerA, 2) // older than k1
	k2.ExpiresAt = ptr(at(1000))
	k3 := newAPIKey("k3", ownerB, 4)
	for _, k := range []auth.APIKey{k1, k2, k3} {
		ok(t, "create api key", s.CreateAPIKey(ctx, k, auth.MaxKeysPerUser))
	}

	dupID := newAPIKey("k1", ownerA, 5)
	dupID.Hash = []byte("another hash")
	is(t, "create key with a taken id", s.CreateAPIKey(ctx, dupID, auth.MaxKeysPerUser), auth.ErrConflict)
	dupHash := newAPIKey("k9", ownerB, 5)
	dupHash.Hash = k1.Hash
	is(t, "create key with a taken hash", s.CreateAPIKey(ctx, dupHash, auth.MaxKeysPerUser), auth.ErrConflict)

	gotKey, gotUser, err := s.LookupAPIKey(ctx, k2.Hash)
	ok(t, "look up key", err)
	equal(t, "looked up key", gotKey, k2)
	equal(t, "user of looked up key", gotUser, ua)
	_, _, err = s.LookupAPIKey(ctx, []byte("no such hash"))
	is(t, "look up unknown hash", err, auth.ErrNotFound)

	keys, err := s.ListAPIKeys(ctx, ownerA)
	ok(t, "list keys of A", err)
	equal(t, "keys of A, oldest first", keys, []auth.APIKey{k2, k1})
	keys, err = s.ListAPIKeys(ctx, "nobody")
	ok(t, "list keys of nobody", err)
	if len(keys) != 0 {
		t.Fatalf("keys of nobody: %d, want none", len(keys))
	}

	is(t, "B deletes A's key", s.DeleteAPIKey(ctx, ownerB, k1.ID), auth.ErrNotFound)
	_, _, err = s.LookupAPIKey(ctx, k1.Hash)
	ok(t, "A's key after B's delete", err)
	ok(t, "A deletes A's key", s.DeleteAPIKey(ctx, ownerA, k1.ID))
	_, _, err = s.LookupAPIKey(ctx, k1.Hash)
	is(t, "look up deleted key", err, auth.ErrNotFound)
	is(t, "delete a deleted key", s.DeleteAPIKey(ctx, ownerA, k1.ID), auth.ErrNotFound)
	keys, err = s.ListAPIKeys(ctx, ownerA)
	ok(t, "list keys of A", err)
	equal(t, "keys of A after delete", keys, []auth.APIKey{k2})

	// The limit counts every key of the user, expired ones too, and only the user's.
	ok(t, "B's second key of two", s.CreateAPIKey(ctx, newAPIKey("k4", ownerB, 6), 2))
	is(t, "B's third key of two", s.CreateAPIKey(ctx, newAPIKey("k5", ownerB, 7), 2), auth.ErrTooManyKeys)
	is(t, "A's second key of one, the first expired", s.CreateAPIKey(ctx, newAPIKey("k6", ownerA, 8), 1), auth.ErrTooManyKeys)
	_, _, err = s.LookupAPIKey(ctx, newAPIKey("k6", ownerA, 8).Hash)
	is(t, "look up a key refused", err, auth.ErrNotFound)
	ok(t, "A deletes the expired key", s.DeleteAPIKey(ctx, ownerA, k2.ID))
	ok(t, "A's first key of one", s.CreateAPIKey(ctx, newAPIKey("k6", ownerA, 8), 1))
	ok(t, "B's third key with no limit", s.CreateAPIKey(ctx, newAPIKey("k5", ownerB, 7), 0))
	keys, err = s.ListAPIKeys(ctx, ownerB)
	ok(t, "list keys of B", err)
	if len(keys) != 3 {
		t.Fatalf("B keeps %d keys, want 3", len(keys))
	}
}

func testBootstrap(t *testing.T, s store.Store) {
	ctx := t.Context()
	admin := newUser("admin", 1)
	admin.IsAdmin = true
	key := newAPIKey("admin-key", admin.ID, 1)
	created, err := s.Bootstrap(ctx, admin, key)
	ok(t, "bootstrap", err)
	if !created {
		t.Fatal("bootstrap of an empty store created nothing")
	}
	gotKey, gotUser, err := s.LookupAPIKey(ctx, key.Hash)
	ok(t, "look up admin key", err)
	equal(t, "admin key", gotKey, key)
	equal(t, "admin", gotUser, admin)

	other := newUser("admin2", 2)
	created, err = s.Bootstrap(ctx, other, newAPIKey("admin2-key", other.ID, 2))
	ok(t, "second bootstrap", err)
	if created {
		t.Fatal("second bootstrap created another admin")
	}
	_, err = s.GetUser(ctx, other.ID)
	is(t, "admin of the second bootstrap", err, auth.ErrNotFound)
}

func testBootstrapAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	admin := newUser("admin", 1)
	_, err := s.Bootstrap(ctx, admin, newAPIKey("key", "not-the-admin", 1))
	fails(t, "bootstrap with a key of another user", err)
	users, _, err := s.ListUsers(ctx, paging.Query{})
	ok(t, "list users", err)
	if len(users) != 0 {
		t.Fatalf("failed bootstrap left %d users", len(users))
	}

	ok(t, "create user", s.CreateUser(ctx, newUser("first", 1)))
	created, err := s.Bootstrap(ctx, admin, newAPIKey("key", admin.ID, 1))
	ok(t, "bootstrap with a user present", err)
	if created {
		t.Fatal("bootstrap created an admin although a user exists")
	}
}

func testBootstrapConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 8
	created := make([]bool, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			admin := newUser(fmt.Sprintf("admin-%d", i), i)
			c, err := s.Bootstrap(ctx, admin, newAPIKey(fmt.Sprintf("key-%d", i), admin.ID, i))
			if err != nil {
				t.Errorf("bootstrap %d: %v", i, err)
			}
			created[i] = c
		})
	}
	close(start)
	wg.Wait()

	winner := slices.Index(created, true)
	if winner < 0 || slices.Contains(created[winner+1:], true) {
		t.Fatalf("bootstraps that created an admin: %v, want exactly one", created)
	}
	users, _, err := s.ListUsers(ctx, paging.Query{})
	ok(t, "list users", err)
	equal(t, "users", ids(users, func(u auth.User) string { return u.ID }), []string{fmt.Sprintf("admin-%d", winner)})
	for i := range n {
		_, _, err := s.LookupAPIKey(ctx, newAPIKey(fmt.Sprintf("key-%d", i), "", i).Hash)
		if i == winner {
			ok(t, "look up the winner's key", err)
		} else {
			is(t, "look up a loser's key", err, auth.ErrNotFound)
		}
	}
}
