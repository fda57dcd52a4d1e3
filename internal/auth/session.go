package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentd/agentd/internal/id"
)

// Browsers sign in with an API key once and then hold a session: a random token in a cookie,
// of which the store keeps only the SHA-256, like API keys. A session acts for the user of the
// key it was opened with, and ends when that key is deleted or expires, when the user signs
// out, or once it has not been used for the session lifetime.

// SessionCookie is the name of the cookie that carries a session's token.
const SessionCookie = "agentd_session"

// CSRFHeader carries a session's CSRF token on requests that change something; the web
// app's forms send it as the field CSRFField instead.
const (
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf_token"
)

// DefaultSessionTTL is how long an unused session lasts.
const DefaultSessionTTL = 7 * 24 * time.Hour

// sessionRenewal is how stale a session's expiry may get before a request renews it, so that
// a busy session is written at most once in that time.
const sessionRenewal = time.Hour

// Session is a signed-in browser.
type Session struct {
	// Hash is the SHA-256 of the session's token; the token is only in the browser's cookie.
	Hash []byte
	// KeyID is the API key the session was opened with; UserID is the key's user.
	KeyID     string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionStore persists sessions. Safe for concurrent use.
type SessionStore interface {
	// CreateSession returns ErrNotFound when the key does not exist (any more).
	CreateSession(ctx context.Context, s Session) error
	// LookupSession finds a session by hash with its user and the key it was opened with;
	// ErrNotFound when none matches (also once its key is deleted).
	LookupSession(ctx context.Context, hash []byte) (Session, APIKey, User, error)
	// ExtendSession sets a session's expiry; ErrNotFound when it is gone.
	ExtendSession(ctx context.Context, hash []byte, expires time.Time) error
	// DeleteSession removes a session; removing one that is gone succeeds.
	DeleteSession(ctx context.Context, hash []byte) error
	// DeleteExpiredSessions removes the sessions that expired before t.
	DeleteExpiredSessions(ctx context.Context, t time.Time) (int, error)
}

// StartSession opens a session for the holder of apiKey and returns its token, to be set as
// the SessionCookie; ErrUnauthorized when the key is wrong or expired.
func (s *Service) StartSession(ctx context.Context, apiKey string) (token string, sess Session, u User, err error) {
	k, u, err := s.lookupKey(ctx, apiKey)
	if err != nil {
		return "", Session{}, User{}, err
	}
	now := s.now().UTC()
	if n, err := s.store.DeleteExpiredSessions(ctx, now); err != nil {
		s.log.Warn("delete expired sessions", "err", err)
	} else if n > 0 {
		s.log.Debug("deleted expired sessions", "count", n)
	}
	token = id.Key(32)
	sess = Session{Hash: Hash(token), KeyID: k.ID, UserID: u.ID, CreatedAt: now, ExpiresAt: s.sessionExpiry(now, k)}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", Session{}, User{}, ErrUnauthorized // the key went meanwhile
		}
		return "", Session{}, User{}, fmt.Errorf("start session: %w", err)
	}
	s.log.Info("session started", "user_id", u.ID, "key_id", k.ID)
	return token, sess, u, nil
}

// SessionUser returns the user of a session's token and renews the session when it is due;
// ErrUnauthorized when the token opens no live session.
func (s *Service) SessionUser(ctx context.Context, token string) (User, Session, error) {
	if token == "" {
		return User{}, Session{}, ErrUnauthorized
	}
	sess, k, u, err := s.store.LookupSession(ctx, Hash(token))
	if errors.Is(err, ErrNotFound) {
		return User{}, Session{}, ErrUnauthorized
	}
	if err != nil {
		return User{}, Session{}, fmt.Errorf("look up session: %w", err)
	}
	now := s.now().UTC()
	if !now.Before(sess.ExpiresAt) {
		return User{}, Session{}, ErrUnauthorized
	}
	if next := s.sessionExpiry(now, k); next.Sub(sess.ExpiresAt) >= sessionRenewal {
		if err := s.store.ExtendSession(ctx, sess.Hash, next); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("extend session", "user_id", u.ID, "err", err)
		} else {
			sess.ExpiresAt = next
		}
	}
	return u, sess, nil
}

// EndSession signs a session out. Ending one that is gone succeeds.
func (s *Service) EndSession(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	if err := s.store.DeleteSession(ctx, Hash(token)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// sessionExpiry is when a session used at now expires: after the session lifetime, and never
// after the key it was opened with.
func (s *Service) sessionExpiry(now time.Time, k APIKey) time.Time {
	exp := now.Add(s.sessionTTL)
	if k.ExpiresAt != nil && k.ExpiresAt.Before(exp) {
		exp = k.ExpiresAt.UTC()
	}
	return exp
}

// CSRFToken is the token that requests of a session must carry to change something. It is
// derived from the session's token, which only the browser's cookie holds (a page of another
// site can neither read it nor compute this), and differs from the hash the store keeps.
func CSRFToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte("agentd csrf token"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether given is the CSRF token of the session, in constant time.
func CheckCSRF(sessionToken, given string) bool {
	if sessionToken == "" || given == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(CSRFToken(sessionToken)), []byte(given)) == 1
}

// SameOrigin reports whether the browser says r comes from a page of this server:
// Sec-Fetch-Site same-origin, else (browsers send no fetch metadata to plain-http hosts other
// than localhost) an Origin whose host is r's Host or that of publicURL. A request with
// neither header is not known to come from here.
func SameOrigin(r *http.Request, publicURL string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return false
	}
	if o.Host == r.Host {
		return true
	}
	p, err := url.Parse(publicURL)
	return err == nil && p.Host != "" && o.Scheme == p.Scheme && o.Host == p.Host
}
