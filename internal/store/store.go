// Package store defines the whole persistence interface of agentd as the union of the domain
// stores. Implementations live in sqlite/ and postgres/; storetest/ is the conformance suite
// every implementation passes.
package store

import (
	"context"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/webhook"
)

// Store is everything agentd keeps durably.
type Store interface {
	auth.Store
	settings.Store
	gitprovider.Store
	customsecret.Store
	sandbox.Store
	conversation.Store
	event.Store
	skill.Store
	webhook.Store

	// Reseal rewrites every sealed value (settings secrets, provider tokens, custom secrets,
	// sandbox session keys, conversation requests and secrets, webhook secrets) through fn in one transaction.
	// Key rotation uses it.
	Reseal(ctx context.Context, fn func(sealed []byte) ([]byte, error)) error
	// KeyringCheck returns the value the store keeps to check keyrings against: sealed by the
	// keyring of the first server that asked, with seal, and stored then. A keyring that
	// cannot open it is not the one the store's secrets are sealed with. Reseal rewrites it
	// with the other sealed values.
	KeyringCheck(ctx context.Context, seal func() ([]byte, error)) ([]byte, error)
	// Counts tallies the rows of every owner by state, for the server's metrics.
	Counts(ctx context.Context) (Counts, error)
	// Ping reports whether the store answers: a read of its schema and a turn on its writing
	// connection, within ctx. Readiness probes call it.
	Ping(ctx context.Context) error
	// Close releases the store. Safe to call twice.
	Close() error
}

// Counts are the store's rows of every owner by state.
type Counts struct {
	// Sandboxes counts sandbox records by backend, node and status.
	Sandboxes map[SandboxKey]int
	// Conversations counts conversations by their agent's execution status ("" for a
	// conversation whose agent never ran).
	Conversations map[string]int
}

// SandboxKey is a backend, the node of a sandbox (empty for records from before nodes), and a
// status.
type SandboxKey struct {
	Backend string
	Node    string
	Status  sandbox.Status
}

// MemoryReleaser is the optional ability of a store that holds memory for speed (caches,
// idle connections, memory outside the Go heap) to let go of it once the server is idle.
// Both stores have it: the SQLite store for its caches, idle connections and SQLite's memory,
// the PostgreSQL store for its listing cache alone (the rest is its server's). ReleaseMemory leaves what is in use alone and may be called at any time,
// concurrently with every other method.
type MemoryReleaser interface {
	ReleaseMemory() error
}

// LimitedInsert is the outcome of an insert made after counting n of a user's rows in the
// same transaction, for both stores: exists when the insert broke a unique constraint (unique,
// as the store's driver tells it), err when it failed otherwise, tooMany when n had reached
// limit (the caller's transaction is then rolled back, the insert with it).
func LimitedInsert(err error, unique bool, n, limit int, exists, tooMany error) error {
	switch {
	case unique:
		return exists
	case err != nil:
		return err
	case n >= limit:
		return tooMany
	}
	return nil
}
