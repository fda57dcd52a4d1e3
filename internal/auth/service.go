package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/paging"
)

// KeyPrefix starts every API key agentd generates, so a leaked key is recognisable.
const KeyPrefix = "agd_"

// prefixLen is how much of a key is kept in clear to tell keys apart.
const prefixLen = 10

// Service manages users and keys and authenticates requests. Safe for concurrent use.
type Service struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	// newKey makes the secret part of new API keys.
	newKey func() string
	// sessionTTL is how long an unused session lasts.
	sessionTTL time.Duration
}

// Options configure a Service. Zero fields take defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	NewID  func() string
	NewKey func() string
	// SessionTTL is how long an unused browser session lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
}

// NewService returns a Service over store.
func NewService(store Store, o Options) *Service {
	s := &Service{store: store, log: o.Logger, now: o.Now, newID: o.NewID, newKey: o.NewKey, sessionTTL: o.SessionTTL}
	if s.sessionTTL <= 0 {
		s.sessionTTL = DefaultSessionTTL
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = id.New
	}
	if s.newKey == nil {
		s.newKey = func() string { return KeyPrefix + id.Key(32) }
	}
	return s
}

// Hash is how keys are stored. Keys are long random strings, so a plain SHA-256 is enough:
// there is nothing to brute-force.
func Hash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// Bootstrap creates the admin user and its first key when the store has no user. With a
// non-empty adminKey that key is used; otherwise one is generated. It returns the key when it
// created one (to be shown once). On later starts a non-empty adminKey that no user holds is
// added to the first admin, so a deployment that sets the key can always use it.
func (s *Service) Bootstrap(ctx context.Context, adminKey string) (shown string, err error) {
	key := adminKey
	if key == "" {
		key = s.newKey()
	}
	now := s.now().UTC()
	admin := User{ID: s.newID(), Name: "admin", IsAdmin: true, CreatedAt: now}
	k := s.newAPIKey(admin.ID, "bootstrap", key, nil)
	created, err := s.store.Bootstrap(ctx, admin, k)
	if err != nil {
		return "", fmt.Errorf("bootstrap admin: %w", err)
	}
	if created {
		if adminKey != "" {
			return "", nil // the operator chose it; nothing to show
		}
		return key, nil
	}
	if adminKey == "" {
		return "", nil
	}
	if _, _, err := s.store.LookupAPIKey(ctx, Hash(adminKey)); err == nil {
		return "", nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("bootstrap admin: %w", err)
	}
	users, _, err := s.store.ListUsers(ctx, pagingFirst)
	if err != nil {
		return "", fmt.Errorf("bootstrap admin: %w", err)
	}
	for _, u := range users {
		if u.IsAdmin {
			// The operator's configured key is added whatever the admin keeps already.
			if err := s.store.CreateAPIKey(ctx, s.newAPIKey(u.ID, "admin-key", adminKey, nil), 0); err != nil {
				return "", fmt.Errorf("bootstrap admin: add configured key: %w", err)
			}
			s.log.Info("configured admin key added", "user_id", u.ID)
			return "", nil
		}
	}
	return "", errors.New("bootstrap admin: no admin user among the first users")
}

func (s *Service) newAPIKey(userID, name, key string, expires *time.Time) APIKey {
	prefix := key
	if len(prefix) > prefixLen {
		prefix = prefix[:prefixLen]
	}
	return APIKey{ID: s.newID(), UserID: userID, Name: name, Prefix: prefix, Hash: Hash(key),
		CreatedAt: s.now().UTC(), ExpiresAt: expires}
}

// Authenticate returns the user holding key, or ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, key string) (User, error) {
	_, u, err := s.lookupKey(ctx, key)
	return u, err
}

// lookupKey finds a live key and its user, or ErrUnauthorized.
func (s *Service) lookupKey(ctx context.Context, key string) (APIKey, User, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return APIKey{}, User{}, ErrUnauthorized
	}
	k, u, err := s.store.LookupAPIKey(ctx, Hash(key))
	if errors.Is(err, ErrNotFound) {
		return APIKey{}, User{}, ErrUnauthorized
	}
	if err != nil {
		return APIKey{}, User{}, fmt.Errorf("authenticate: %w", err)
	}
	if k.ExpiresAt != nil && !s.now().Before(*k.ExpiresAt) {
		return APIKey{}, User{}, ErrUnauthorized
	}
	return k, u, nil
}

// ListUsers pages through the users, oldest first; only admins may.
func (s *Service) ListUsers(ctx context.Context, caller User, q paging.Query) ([]User, string, error) {
	if !caller.IsAdmin {
		return nil, "", ErrForbidden
	}
	users, next, err := s.store.ListUsers(ctx, q)
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	return users, next, nil
}

// CreateUser adds a user; only admins may.
func (s *Service) CreateUser(ctx context.Context, caller User, name string, isAdmin bool) (User, error) {
	if !caller.IsAdmin {
		return User{}, ErrForbidden
	}
	u := User{ID: s.newID(), Name: strings.TrimSpace(name), IsAdmin: isAdmin, CreatedAt: s.now().UTC()}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// CreateKey makes a key for userID (empty: the caller). Only admins may make keys for others.
// The returned string is the key itself, shown this once. ErrTooManyKeys when the user has
// MaxKeysPerUser keys already.
func (s *Service) CreateKey(ctx context.Context, caller User, userID, name string, expires *time.Time) (APIKey, string, error) {
	if userID == "" {
		userID = caller.ID
	}
	if userID != caller.ID && !caller.IsAdmin {
		return APIKey{}, "", ErrForbidden
	}
	if expires != nil && !expires.After(s.now()) {
		return APIKey{}, "", fmt.Errorf("create key: %w", ErrExpiresInPast)
	}
	key := s.newKey()
	k := s.newAPIKey(userID, strings.TrimSpace(name), key, expires)
	if err := s.store.CreateAPIKey(ctx, k, MaxKeysPerUser); err != nil {
		return APIKey{}, "", fmt.Errorf("create key: %w", err)
	}
	return k, key, nil
}

// ErrExpiresInPast: a new key's expiry is not in the future.
var ErrExpiresInPast = errors.New("expires_at must be in the future")

// ListKeys lists userID's keys (empty: the caller's). Only admins may list others' keys.
func (s *Service) ListKeys(ctx context.Context, caller User, userID string) ([]APIKey, error) {
	if userID == "" {
		userID = caller.ID
	}
	if userID != caller.ID && !caller.IsAdmin {
		return nil, ErrForbidden
	}
	keys, err := s.store.ListAPIKeys(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

// DeleteKey removes one of userID's keys (empty: the caller's). Only admins may delete others'.
func (s *Service) DeleteKey(ctx context.Context, caller User, userID, keyID string) error {
	if userID == "" {
		userID = caller.ID
	}
	if userID != caller.ID && !caller.IsAdmin {
		return ErrForbidden
	}
	if err := s.store.DeleteAPIKey(ctx, userID, keyID); err != nil {
		return fmt.Errorf("delete key: %w", err)
	}
	return nil
}
