package gitprovider

import "context"

// UserInfo returns the user's account at provider as the provider describes it, or with
// provider "" at the first of their providers (in the order of Providers). It returns that
// provider.
func (s *Service) UserInfo(ctx context.Context, userID, provider string) (string, User, error) {
	stored, plain, err := s.accounts(ctx, userID)
	if err != nil {
		return "", User{}, err
	}
	for i, t := range stored {
		if provider != "" && t.Provider != provider {
			continue
		}
		a, err := s.connect(ctx, userID, t.Provider, t.Host, plain[i])
		if err != nil {
			return "", User{}, err
		}
		u, err := a.api.User(ctx)
		return t.Provider, u, err
	}
	return "", User{}, errNoToken(provider)
}
