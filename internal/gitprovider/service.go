package gitprovider

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/agentd/agentd/internal/secret"
)

// Service stores users' provider tokens. Safe for concurrent use.
type Service struct {
	store  Store
	sealer secret.Sealer
	now    func() time.Time
	// changed is told the user whose tokens changed; see OnSecretsChange.
	changed func(userID string)
}

// OnSecretsChange registers fn to be called after a user's tokens may have changed. Call it
// before the service is used.
func (s *Service) OnSecretsChange(fn func(userID string)) { s.changed = fn }

// SecretValues returns the user's provider tokens, which conversations mask in what they
// record.
func (s *Service) SecretValues(ctx context.Context, userID string) ([]string, error) {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("provider tokens of %s: %w", userID, err)
	}
	out := make([]string, 0, len(stored))
	for _, t := range stored {
		p, err := s.sealer.Open(t.TokenSealed)
		if err != nil {
			return nil, fmt.Errorf("provider tokens of %s: open %s: %w", userID, t.Provider, err)
		}
		out = append(out, string(p))
	}
	return out, nil
}

// NewService returns a Service. now may be nil.
func NewService(store Store, sealer secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, sealer: sealer, now: now}
}

// TokenInput is one provider entry sent by a client.
type TokenInput struct {
	Provider string
	Token    string // empty: keep the stored token
	Host     *string
	UserID   *string
}

// Store merges tokens into the user's set: a provider sent with a token gets that token; a
// provider sent without one keeps its stored token (and takes the new host); providers not
// sent are kept as they are. A provider sent without a token and with nothing stored is
// skipped.
func (s *Service) Store(ctx context.Context, userID string, in []TokenInput) error {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return fmt.Errorf("store provider tokens: %w", err)
	}
	byName := map[string]Token{}
	for _, t := range stored {
		byName[t.Provider] = t
	}
	now := s.now().UTC()
	for _, t := range in {
		cur, had := byName[t.Provider]
		if t.Token == "" && !had {
			continue
		}
		if t.Token != "" {
			sealed, err := s.sealer.Seal([]byte(t.Token))
			if err != nil {
				return fmt.Errorf("store provider tokens: seal: %w", err)
			}
			cur = Token{Provider: t.Provider, TokenSealed: sealed}
		}
		cur.Host = ""
		if t.Host != nil {
			cur.Host = *t.Host
		}
		if t.UserID != nil {
			cur.ExternalUserID = *t.UserID
		}
		cur.UpdatedAt = now
		byName[t.Provider] = cur
	}
	out := make([]Token, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	if err := s.store.ReplaceProviderTokens(ctx, userID, out); err != nil {
		return fmt.Errorf("store provider tokens: %w", err)
	}
	if s.changed != nil {
		s.changed(userID)
	}
	return nil
}

// Unset removes all of the user's provider tokens.
func (s *Service) Unset(ctx context.Context, userID string) error {
	if err := s.store.ReplaceProviderTokens(ctx, userID, nil); err != nil {
		return fmt.Errorf("unset provider tokens: %w", err)
	}
	if s.changed != nil {
		s.changed(userID)
	}
	return nil
}

// Hosts returns, for every provider the user has a token for, its host (nil for the
// provider's default host).
func (s *Service) Hosts(ctx context.Context, userID string) (map[string]*string, error) {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("provider hosts: %w", err)
	}
	out := make(map[string]*string, len(stored))
	for _, t := range stored {
		if t.Host == "" {
			out[t.Provider] = nil
		} else {
			h := t.Host
			out[t.Provider] = &h
		}
	}
	return out, nil
}

// Token returns the user's token for a provider; ok is false when none is stored.
func (s *Service) Token(ctx context.Context, userID, provider string) (token Token, plain string, ok bool, err error) {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return Token{}, "", false, fmt.Errorf("provider token: %w", err)
	}
	for _, t := range stored {
		if t.Provider == provider {
			p, err := s.sealer.Open(t.TokenSealed)
			if err != nil {
				return Token{}, "", false, fmt.Errorf("provider token: open: %w", err)
			}
			return t, string(p), true, nil
		}
	}
	return Token{}, "", false, nil
}
