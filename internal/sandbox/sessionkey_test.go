package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

func TestSessionKeyAuthentication(t *testing.T) {
	e := newEnv(t)
	s := e.service(e.backend(), func(o *sandbox.ServiceOptions) { o.NewKey = func() string { return "key-of-alice" } })
	ctx := testContext(t)
	sb := startRunning(t, s, "alice")

	got, err := s.AuthenticateSessionKey(ctx, sb.ID, "key-of-alice")
	if err != nil || got.ID != sb.ID || got.OwnerID != "alice" {
		t.Fatalf("the sandbox's own key: %+v, %v", got, err)
	}
	got, err = s.SandboxForSessionKey(ctx, "key-of-alice")
	if err != nil || got.ID != sb.ID || got.OwnerID != "alice" {
		t.Fatalf("found by its key: %+v, %v", got, err)
	}
	for name, check := range map[string]error{
		"a wrong key":              ignore(s.AuthenticateSessionKey(ctx, sb.ID, "key-of-alicE")),
		"no key":                   ignore(s.AuthenticateSessionKey(ctx, sb.ID, "")),
		"another sandbox":          ignore(s.AuthenticateSessionKey(ctx, "0123456789abcdef0123456789abcdef", "key-of-alice")),
		"a key of no sandbox":      ignore(s.SandboxForSessionKey(ctx, "key-of-bob")),
		"no key, and no sandbox":   ignore(s.SandboxForSessionKey(ctx, "")),
		"a key of a prefix length": ignore(s.SandboxForSessionKey(ctx, "key-of")),
	} {
		if !errors.Is(check, sandbox.ErrSessionKey) {
			t.Errorf("%s: %v, want ErrSessionKey", name, check)
		}
	}
}

// TestSessionKeyHashFilledIn: a record stored before the digest was kept is found by its key
// once the service has reconciled.
func TestSessionKeyHashFilledIn(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	sealed, err := sandboxtest.Sealer{}.Seal([]byte("an old key"))
	must(t, err)
	now := time.Now().UTC()
	must(t, e.store.CreateSandbox(ctx, sandbox.Sandbox{ID: "00000000000000000000000000000001", OwnerID: "alice",
		SpecID: "default", Backend: "process", Status: sandbox.StatusError, Detail: "long ago",
		SessionKeySealed: sealed, CreatedAt: now, UpdatedAt: now}, 0))
	s := e.service(e.backend(), nil)
	if _, err := s.SandboxForSessionKey(ctx, "an old key"); !errors.Is(err, sandbox.ErrSessionKey) {
		t.Fatalf("before reconciling: %v, want ErrSessionKey (the store has no digest yet)", err)
	}
	must(t, s.Reconcile(ctx))
	got, err := s.SandboxForSessionKey(ctx, "an old key")
	if err != nil || got.OwnerID != "alice" {
		t.Fatalf("after reconciling: %+v, %v", got, err)
	}
}

func ignore(_ sandbox.Sandbox, err error) error { return err }
