// Package gitprovider knows the git hosting providers (GitHub and GitHub Enterprise Server,
// GitLab and self-managed GitLab, Bitbucket Cloud and Data Center, and enterprise hosts that
// speak one of those APIs). It keeps each user's provider tokens, sealed, checks them with their
// provider before storing them, calls the providers' REST APIs on the user's behalf through the
// URL policy's client for that user, and says where a repository lives upstream and how agentd
// authenticates to it (Remote). Tokens go only into the Authorization header of requests to
// the provider they belong to: never into a URL, an error or a log line.
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
