package gitprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// account is one provider token ready to call its API.
type account struct {
	provider string
	ep       endpoint
	token    string
	api      API
}

// connect finds where provider's API lives for a token stored with host ("" for the public
// service) and returns the account that calls it on the user's behalf. A user's host may be
// plain http only where the URL policy admits it for the user; an enterprise_sso host's API
// family is found by probing.
func (s *Service) connect(ctx context.Context, userID, provider, host, token string) (account, error) {
	hc, err := s.o.Client(ctx, userID)
	if err != nil {
		return account{}, fmt.Errorf("%s client of %s: %w", provider, userID, err)
	}
	var ep endpoint
	root, err := parseHost(host)
	switch {
	case strings.TrimSpace(host) == "" || err == nil && isPublicHost(provider, root):
		if ep, err = s.o.Endpoints.configured(provider); err != nil {
			return account{}, err
		}
	case err != nil:
		return account{}, newError(provider, ErrBadHost, nil, "The %s %s", provider, err)
	default:
		if root.Scheme == "http" {
			ok, err := s.o.PlainHTTP(ctx, userID, root.Hostname())
			if err != nil {
				return account{}, fmt.Errorf("%s host of %s: %w", provider, userID, err)
			}
			if !ok {
				return account{}, newError(provider, ErrBadHost, nil,
					"The %s host %s is plain http, which would send the token in clear: use https, or ask the administrator to allow this host", provider, root.Redacted())
			}
		}
		if provider == EnterpriseSSO {
			if ep, err = s.detect(ctx, provider, root, token, hc); err != nil {
				return account{}, err
			}
		} else {
			ep = selfHosted(provider, root)
		}
	}
	return account{provider: provider, ep: ep, token: token, api: newAPI(provider, ep, token, hc)}, nil
}

// accounts returns the user's stored tokens in the order of Providers, opened.
func (s *Service) accounts(ctx context.Context, userID string) ([]Token, []string, error) {
	stored, err := s.store.ProviderTokens(ctx, userID)
	if err != nil {
		return nil, nil, fmt.Errorf("provider tokens of %s: %w", userID, err)
	}
	slices.SortFunc(stored, func(a, b Token) int { return slices.Index(Providers, a.Provider) - slices.Index(Providers, b.Provider) })
	plain := make([]string, len(stored))
	for i, t := range stored {
		p, err := s.sealer.Open(t.TokenSealed)
		if err != nil {
			return nil, nil, fmt.Errorf("provider tokens of %s: open %s: %w", userID, t.Provider, err)
		}
		plain[i] = string(p)
	}
	return stored, plain, nil
}

// errNoToken says the user has no token for provider ("" for any).
func errNoToken(provider string) error {
	if provider == "" {
		return newError("", ErrNoToken, nil, "No git provider token is stored: add one with POST /api/add-git-providers")
	}
	return newError(provider, ErrNoToken, nil, "No %s token is stored: add one with POST /api/add-git-providers", provider)
}

// API returns the user's account at provider, to call its API with their stored token.
func (s *Service) API(ctx context.Context, userID, provider string) (API, error) {
	stored, plain, err := s.accounts(ctx, userID)
	if err != nil {
		return nil, err
	}
	for i, t := range stored {
		if t.Provider == provider {
			a, err := s.connect(ctx, userID, provider, t.Host, plain[i])
			if err != nil {
				return nil, err
			}
			return a.api, nil
		}
	}
	return nil, errNoToken(provider)
}

// check tries, before anything is stored, every token in the request, and every stored token
// that the request moves to another host, with its provider: the provider must say whose
// token it is. Providers are checked in a fixed order, so the first failure is always the
// same one.
func (s *Service) check(ctx context.Context, userID string, stored map[string]Token, in []TokenInput) error {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b TokenInput) int {
		return slices.Index(Providers, a.Provider) - slices.Index(Providers, b.Provider)
	})
	for _, t := range in {
		host := ""
		if t.Host != nil {
			host = *t.Host
		}
		token := t.Token
		if token == "" {
			cur, had := stored[t.Provider]
			if !had || cur.Host == host {
				continue
			}
			p, err := s.sealer.Open(cur.TokenSealed)
			if err != nil {
				return fmt.Errorf("check provider tokens: open %s: %w", t.Provider, err)
			}
			token = string(p)
		}
		a, err := s.connect(ctx, userID, t.Provider, host, token)
		if err != nil {
			return err
		}
		if _, err := a.api.User(ctx); err != nil {
			return checkError(t.Provider, a.ep, err)
		}
	}
	return nil
}

// checkError words a failed token check. A host that answers 404 where the family's user
// resource is has no such API there.
func checkError(provider string, ep endpoint, err error) error {
	if errors.Is(err, ErrNotFound) {
		return newError(provider, ErrBadHost, err, "The %s host %s has no %s API at %s", provider, ep.base.Host, ep.family, ep.base.Path)
	}
	return err
}
