package auth_test

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// clock is a time that tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newService(t *testing.T, ttl time.Duration) (*auth.Service, *clock, string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{t: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)}
	s := auth.NewService(st, auth.Options{Now: c.now, SessionTTL: ttl})
	key, err := s.Bootstrap(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s, c, key
}

func TestSessionLifecycle(t *testing.T) {
	ctx := t.Context()
	s, c, key := newService(t, 24*time.Hour)

	if _, _, _, err := s.StartSession(ctx, "wrong key"); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("session of a wrong key: %v, want ErrUnauthorized", err)
	}
	token, sess, u, err := s.StartSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !u.IsAdmin || sess.UserID != u.ID {
		t.Fatalf("session of %+v for %+v, want the admin's", sess, u)
	}
	if got := sess.ExpiresAt.Sub(c.now()); got != 24*time.Hour {
		t.Fatalf("session lasts %s, want 24h", got)
	}

	got, _, err := s.SessionUser(ctx, token)
	if err != nil || got.ID != u.ID {
		t.Fatalf("user of the session: %+v, %v", got, err)
	}
	if _, _, err := s.SessionUser(ctx, token+"x"); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v, want ErrUnauthorized", err)
	}

	// Used within its lifetime, the session is renewed; unused for longer, it ends.
	c.add(20 * time.Hour)
	_, renewed, err := s.SessionUser(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if want := c.now().Add(24 * time.Hour); !renewed.ExpiresAt.Equal(want) {
		t.Fatalf("renewed to %s, want %s", renewed.ExpiresAt, want)
	}
	c.add(23 * time.Hour)
	if _, _, err := s.SessionUser(ctx, token); err != nil {
		t.Fatalf("session used 23h after its renewal: %v", err)
	}
	c.add(25 * time.Hour)
	if _, _, err := s.SessionUser(ctx, token); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("session unused for 25h: %v, want ErrUnauthorized", err)
	}

	// Signing out ends it; twice is fine.
	token, _, _, err = s.StartSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.EndSession(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.SessionUser(ctx, token); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("session after sign-out: %v, want ErrUnauthorized", err)
	}
}

func TestSessionEndsWithItsKey(t *testing.T) {
	ctx := t.Context()
	s, c, admin := newService(t, 24*time.Hour)
	au, err := s.Authenticate(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	expires := c.now().Add(2 * time.Hour)
	k, key, err := s.CreateKey(ctx, au, "", "short", &expires)
	if err != nil {
		t.Fatal(err)
	}
	token, sess, _, err := s.StartSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !sess.ExpiresAt.Equal(expires) {
		t.Fatalf("session of a key expiring at %s expires at %s", expires, sess.ExpiresAt)
	}
	if err := s.DeleteKey(ctx, au, "", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SessionUser(ctx, token); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("session of a deleted key: %v, want ErrUnauthorized", err)
	}
}

func TestCSRFToken(t *testing.T) {
	a, b := auth.CSRFToken("session one"), auth.CSRFToken("session two")
	if a == b || a == "" {
		t.Fatalf("CSRF tokens of two sessions: %q and %q", a, b)
	}
	if string(auth.Hash("session one")) == a {
		t.Fatal("the CSRF token is the stored hash")
	}
	for _, tt := range []struct {
		session, given string
		want           bool
	}{
		{"session one", a, true},
		{"session one", b, false},
		{"session one", "", false},
		{"", auth.CSRFToken(""), false},
	} {
		if got := auth.CheckCSRF(tt.session, tt.given); got != tt.want {
			t.Errorf("CheckCSRF(%q, %q) = %v", tt.session, tt.given, got)
		}
	}
}
