package gitprovider

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/secret"
)

// Options configure a Service; the zero value reaches the public providers through the URL
// policy without an allow-list.
type Options struct {
	Now func() time.Time
	// Endpoints are the public providers' API base URLs; an empty field is the default.
	Endpoints Endpoints
	// Client returns the HTTP client for calls on a user's behalf: the URL policy's client
	// for that user. nil means the policy's client without an allow-list.
	Client func(ctx context.Context, userID string) (*http.Client, error)
	// PlainHTTP says whether the user may send a token over plain http to host (a name or an
	// address): only where the URL policy admits the host for them. nil means never.
	PlainHTTP func(ctx context.Context, userID, host string) (bool, error)
	Logger    *slog.Logger
}

// Service keeps users' provider tokens, checks them with their providers, and calls the
// providers' APIs with them. Safe for concurrent use.
type Service struct {
	store    Store
	sealer   secret.Sealer
	o        Options
	now      func() time.Time
	families families
	remotes  remoteCache
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

// NewService returns a Service.
func NewService(store Store, sealer secret.Sealer, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Endpoints.GitHub == "" {
		o.Endpoints.GitHub = DefaultEndpoints.GitHub
	}
	if o.Endpoints.GitLab == "" {
		o.Endpoints.GitLab = DefaultEndpoints.GitLab
	}
	if o.Endpoints.Bitbucket == "" {
		o.Endpoints.Bitbucket = DefaultEndpoints.Bitbucket
	}
	if o.Client == nil {
		strict, _ := netpolicy.New(nil) // an empty allow-list cannot be wrong
		o.Client = func(context.Context, string) (*http.Client, error) { return strict.Client(false), nil }
	}
	if o.PlainHTTP == nil {
		o.PlainHTTP = func(context.Context, string, string) (bool, error) { return false, nil }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, sealer: sealer, o: o, now: o.Now}
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
// skipped. Every token sent, and every stored token sent with a new host, is checked with
// its provider first; one that fails stores nothing, and the *Error names the provider.
func (s *Service) Store(ctx context.Context, userID string, in []TokenInput) error {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return fmt.Errorf("store provider tokens: %w", err)
	}
	byName := map[string]Token{}
	for _, t := range stored {
		byName[t.Provider] = t
	}
	if err := s.check(ctx, userID, byName, in); err != nil {
		return err
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
	s.remotes.forget(userID)
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
	s.remotes.forget(userID)
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
