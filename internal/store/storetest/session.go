package storetest

import (
	"crypto/sha256"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/store"
)

func newSession(name, keyID, userID string, created, expires int) auth.Session {
	h := sha256.Sum256([]byte("session " + name))
	return auth.Session{Hash: h[:], KeyID: keyID, UserID: userID, CreatedAt: at(created), ExpiresAt: at(expires)}
}

func testSessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	ua, ub := newUser(ownerA, 1), newUser(ownerB, 2)
	ok(t, "create user A", s.CreateUser(ctx, ua))
	ok(t, "create user B", s.CreateUser(ctx, ub))
	ka, kb := newAPIKey("ka", ownerA, 3), newAPIKey("kb", ownerB, 3)
	ok(t, "create key of A", s.CreateAPIKey(ctx, ka, auth.MaxKeysPerUser))
	ok(t, "create key of B", s.CreateAPIKey(ctx, kb, auth.MaxKeysPerUser))

	is(t, "session of a missing key", s.CreateSession(ctx, newSession("x", "nokey", ownerA, 4, 100)), auth.ErrNotFound)
	is(t, "session of B's key for A", s.CreateSession(ctx, newSession("x", kb.ID, ownerA, 4, 100)), auth.ErrNotFound)

	s1 := newSession("s1", ka.ID, ownerA, 4, 100)
	s2 := newSession("s2", ka.ID, ownerA, 5, 10)
	s3 := newSession("s3", kb.ID, ownerB, 6, 100)
	for _, sess := range []auth.Session{s1, s2, s3} {
		ok(t, "create session", s.CreateSession(ctx, sess))
	}
	is(t, "session with a taken hash", s.CreateSession(ctx, s1), auth.ErrConflict)

	got, key, user, err := s.LookupSession(ctx, s1.Hash)
	ok(t, "look up session", err)
	equal(t, "session", got, s1)
	equal(t, "key of the session", key, ka)
	equal(t, "user of the session", user, ua)
	_, _, _, err = s.LookupSession(ctx, []byte("no such hash"))
	is(t, "look up unknown session", err, auth.ErrNotFound)

	ok(t, "extend session", s.ExtendSession(ctx, s1.Hash, at(200)))
	got, _, _, err = s.LookupSession(ctx, s1.Hash)
	ok(t, "look up extended session", err)
	equal(t, "extended expiry", got.ExpiresAt, at(200))
	is(t, "extend unknown session", s.ExtendSession(ctx, []byte("no such hash"), at(200)), auth.ErrNotFound)

	n, err := s.DeleteExpiredSessions(ctx, at(50))
	ok(t, "delete expired sessions", err)
	equal(t, "expired sessions deleted", n, 1)
	_, _, _, err = s.LookupSession(ctx, s2.Hash)
	is(t, "look up expired session", err, auth.ErrNotFound)

	ok(t, "delete session", s.DeleteSession(ctx, s3.Hash))
	ok(t, "delete a deleted session", s.DeleteSession(ctx, s3.Hash))
	_, _, _, err = s.LookupSession(ctx, s3.Hash)
	is(t, "look up deleted session", err, auth.ErrNotFound)

	// Deleting the key ends the sessions opened with it.
	ok(t, "delete key of A", s.DeleteAPIKey(ctx, ownerA, ka.ID))
	_, _, _, err = s.LookupSession(ctx, s1.Hash)
	is(t, "session of a deleted key", err, auth.ErrNotFound)
}
