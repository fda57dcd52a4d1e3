// Package auth holds users, their API keys (stored only as hashes) and the identity of a request.
package auth

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Sentinel errors.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("already exists")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("admin rights required")
	// ErrTooManyKeys: the user has MaxKeysPerUser keys already.
	ErrTooManyKeys = errors.New("too many API keys")
)

// MaxKeysPerUser bounds the API keys of one user: far more than anyone rotates through, and
// few enough that a user cannot make a listing of their keys, which is not paged, or the table
// that every request's key is looked up in, grow without end.
const MaxKeysPerUser = 100

// User is one account. Every conversation, sandbox, start task, setting and token belongs to one.
type User struct {
	ID        string
	Name      string
	IsAdmin   bool
	CreatedAt time.Time
}

// APIKey is a stored key. The key itself is never stored: only its SHA-256 hash.
type APIKey struct {
	ID     string
	UserID string
	Name   string
	// Prefix is the first characters of the key, shown so people can tell keys apart.
	Prefix    string
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt *time.Time
}

// Store persists users and keys. Safe for concurrent use.
type Store interface {
	// Bootstrap creates admin and key together if no user exists yet; created reports whether
	// it did. It is atomic: two servers starting at once create one admin.
	Bootstrap(ctx context.Context, admin User, key APIKey) (created bool, err error)
	// CreateUser returns ErrConflict when the name is taken.
	CreateUser(ctx context.Context, u User) error
	GetUser(ctx context.Context, id string) (User, error)
	// ListUsers pages through users, oldest first.
	ListUsers(ctx context.Context, q paging.Query) (users []User, next string, err error)
	// CreateAPIKey returns ErrNotFound when the user does not exist, and ErrTooManyKeys when
	// the user has limit keys already (expired ones too); limit <= 0 bounds nothing. Counting
	// and inserting are one step: concurrent creations cannot both pass the limit.
	CreateAPIKey(ctx context.Context, k APIKey, limit int) error
	// LookupAPIKey finds a key by hash with its user; ErrNotFound when none matches.
	LookupAPIKey(ctx context.Context, hash []byte) (APIKey, User, error)
	// ListAPIKeys lists a user's keys, oldest first.
	ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error)
	// DeleteAPIKey returns ErrNotFound when the user has no key with that id; the sessions
	// opened with the key go with it.
	DeleteAPIKey(ctx context.Context, userID, keyID string) error

	SessionStore
}
