// Package customsecret keeps users' custom secrets: named values, sealed at rest, that a
// user's conversations may hand to the commands their agent runs, as environment variables.
// Values never leave agentd except towards those commands; clients see names and
// descriptions only.
package customsecret

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("secret not found")
	ErrExists   = errors.New("a secret with that name already exists")
	// ErrTooMany: the user keeps MaxPerUser secrets already.
	ErrTooMany = errors.New("too many secrets")
)

// Secret is one stored secret. The value itself is sealed.
type Secret struct {
	Name        string
	Description string
	ValueSealed []byte
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Plain is a secret with its value opened, for the commands that get it.
type Plain struct {
	Name        string
	Description string
	Value       string
}

// Store persists secrets per user. Safe for concurrent use. userID scopes every call:
// another user's secrets are ErrNotFound and never listed.
type Store interface {
	// CreateCustomSecret stores a new secret. ErrExists when the user has one of that name;
	// ErrTooMany when the user has limit secrets already (checked in the same transaction).
	CreateCustomSecret(ctx context.Context, userID string, s Secret, limit int) error
	// GetCustomSecret returns the user's secret called name, or ErrNotFound.
	GetCustomSecret(ctx context.Context, userID, name string) (Secret, error)
	// CustomSecrets returns all of the user's secrets, ordered by name byte by byte (as in
	// the C collation: upper case before lower case).
	CustomSecrets(ctx context.Context, userID string) ([]Secret, error)
	// ListCustomSecrets pages through the user's secrets in the order of CustomSecrets; a
	// non-empty nameContains keeps those whose name contains it, ignoring case.
	ListCustomSecrets(ctx context.Context, userID, nameContains string, q paging.Query) (ss []Secret, next string, err error)
	// UpdateCustomSecret replaces the secret called name with s, whose name may differ (a
	// rename). ErrNotFound when there is no such secret; ErrExists when s.Name is another
	// secret's name.
	UpdateCustomSecret(ctx context.Context, userID, name string, s Secret) error
	// DeleteCustomSecret removes the secret called name, or answers ErrNotFound.
	DeleteCustomSecret(ctx context.Context, userID, name string) error
}
