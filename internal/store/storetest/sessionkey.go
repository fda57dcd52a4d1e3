package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// testSandboxBySessionKeyHash: a sandbox is found by its key's digest whoever owns it, a
// record made without one gets it later, and a digest of no sandbox is ErrNotFound.
func testSandboxBySessionKeyHash(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := newSandbox(ownerA, "sb-a", 1, sandbox.StatusRunning)
	b := newSandbox(ownerB, "sb-b", 2, sandbox.StatusRunning)
	old := newSandbox(ownerA, "sb-old", 3, sandbox.StatusPaused)
	old.SessionKeyHash = nil
	for _, sb := range []sandbox.Sandbox{a, b, old} {
		ok(t, "create sandbox "+sb.ID, s.CreateSandbox(ctx, sb, 0))
	}
	got, err := s.SandboxBySessionKeyHash(ctx, b.SessionKeyHash)
	ok(t, "find B's sandbox by its key", err)
	equal(t, "B's sandbox", got, b)
	_, err = s.SandboxBySessionKeyHash(ctx, sandbox.HashSessionKey("no such key"))
	is(t, "find by a key of no sandbox", err, sandbox.ErrNotFound)
	_, err = s.SandboxBySessionKeyHash(ctx, nil)
	is(t, "find by no digest", err, sandbox.ErrNotFound)

	hash := sandbox.HashSessionKey("session key of sb-old")
	ok(t, "set the digest of an old record", s.SetSessionKeyHash(ctx, old.ID, hash))
	old.SessionKeyHash = hash
	got, err = s.SandboxBySessionKeyHash(ctx, hash)
	ok(t, "find the old record by its key", err)
	equal(t, "old record", got, old)
	is(t, "set the digest of a missing record", s.SetSessionKeyHash(ctx, "sb-missing", hash), sandbox.ErrNotFound)
}
