package gitprovider

import (
	"context"
	"errors"
	"net/url"
	"strings"
)

// Remote returns where the user's repository lives upstream and the Authorization header
// that reaches it with their token. With provider "" it is the first of the user's providers
// (in the order of Providers) whose token reaches the repository; with a provider, only that
// one. The clone URL is the one the provider gives, without any user name in it; it may be
// plain http only where the URL policy admits its host for the user. A Remote resolved in the
// last remoteTTL is given again without asking the provider, unless the user's tokens changed.
func (s *Service) Remote(ctx context.Context, userID, provider, repository string) (Remote, error) {
	key := remoteKey{userID, provider, repository}
	if r, ok := s.remotes.get(key, s.now()); ok {
		return r, nil
	}
	r, err := s.resolve(ctx, userID, provider, repository)
	if err != nil {
		return Remote{}, err
	}
	s.remotes.put(key, r, s.now())
	return r, nil
}

func (s *Service) resolve(ctx context.Context, userID, provider, repository string) (Remote, error) {
	a, repo, err := s.reach(ctx, userID, provider, repository)
	if err != nil {
		return Remote{}, err
	}
	user, err := a.api.User(ctx)
	if err != nil {
		return Remote{}, err
	}
	u, err := s.cloneURL(ctx, userID, a.provider, repo)
	if err != nil {
		return Remote{}, err
	}
	return Remote{Provider: a.provider, Repository: repo.FullName, URL: u,
		Authorization: gitAuth(a.ep.family, a.token), AuthorName: user.Login, AuthorEmail: user.Email}, nil
}

func (s *Service) cloneURL(ctx context.Context, userID, provider string, repo Repository) (*url.URL, error) {
	u, err := url.Parse(repo.CloneURL)
	if repo.CloneURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, newError(provider, ErrUnavailable, err, "The %s API gave no usable https clone URL for %s", provider, repo.FullName)
	}
	// Bitbucket writes the user's name into its clone URLs; the proxy authenticates instead.
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	if u.Scheme == "http" {
		ok, err := s.o.PlainHTTP(ctx, userID, u.Hostname())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, newError(provider, ErrBadHost, nil,
				"The %s clone URL of %s is plain http, which would send the token in clear", provider, repo.FullName)
		}
	}
	return u, nil
}

// reach finds the account whose token reaches the repository: the provider's, or with
// provider "" the first of the user's that does.
func (s *Service) reach(ctx context.Context, userID, provider, repository string) (account, Repository, error) {
	name, err := CleanRepository(repository)
	if err != nil {
		return account{}, Repository{}, newError(provider, ErrBadRepository, nil, "%s", strings.TrimPrefix(err.Error(), ErrBadRepository.Error()+": "))
	}
	stored, plain, err := s.accounts(ctx, userID)
	if err != nil {
		return account{}, Repository{}, err
	}
	var tried []string
	var firstErr error
	for i, t := range stored {
		if provider != "" && t.Provider != provider {
			continue
		}
		tried = append(tried, t.Provider)
		a, repo, err := s.reachWith(ctx, userID, t, plain[i], name)
		if err == nil {
			return a, repo, nil
		}
		// A provider that failed outright says more than one that does not hold the repository.
		if firstErr == nil || errors.Is(firstErr, ErrNotFound) && !errors.Is(err, ErrNotFound) {
			firstErr = err
		}
	}
	switch {
	case len(tried) == 0:
		return account{}, Repository{}, errNoToken(provider)
	case len(tried) > 1 && errors.Is(firstErr, ErrNotFound):
		return account{}, Repository{}, newError("", ErrNotFound, firstErr,
			"None of your git provider tokens (%s) reaches the repository %s: it does not exist or they may not see it", strings.Join(tried, ", "), name)
	}
	return account{}, Repository{}, firstErr
}

func (s *Service) reachWith(ctx context.Context, userID string, t Token, token, name string) (account, Repository, error) {
	a, err := s.connect(ctx, userID, t.Provider, t.Host, token)
	if err != nil {
		return account{}, Repository{}, err
	}
	repo, err := a.api.Repository(ctx, name)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden) {
		return account{}, Repository{}, newError(t.Provider, ErrNotFound, err,
			"The %s token cannot reach the repository %s: it does not exist or the token may not see it", t.Provider, name)
	}
	if err != nil {
		return account{}, Repository{}, err
	}
	if repo.FullName == "" {
		repo.FullName = name
	}
	return a, repo, nil
}
