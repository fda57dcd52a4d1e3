// Package gitprovider knows the git hosting providers (GitHub, GitLab, Bitbucket and enterprise
// hosts) and keeps each user's provider tokens, sealed.
package gitprovider

import (
	"context"
	"time"
)

// Provider names, as in OpenHands' ProviderType.
const (
	GitHub        = "github"
	GitLab        = "gitlab"
	Bitbucket     = "bitbucket"
	EnterpriseSSO = "enterprise_sso"
)

// Providers lists every provider name in a stable order.
var Providers = []string{GitHub, GitLab, Bitbucket, EnterpriseSSO}

// Token is one stored provider token. The token itself is sealed.
type Token struct {
	Provider    string
	TokenSealed []byte
	Host        string
	// ExternalUserID is the user id at the provider, when the client sent one.
	ExternalUserID string
	UpdatedAt      time.Time
}

// Store persists tokens per user. Safe for concurrent use.
type Store interface {
	// ProviderTokens returns the user's tokens ordered by provider name.
	ProviderTokens(ctx context.Context, userID string) ([]Token, error)
	// ReplaceProviderTokens atomically replaces the user's whole token set.
	ReplaceProviderTokens(ctx context.Context, userID string, tokens []Token) error
}
