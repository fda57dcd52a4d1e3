package sandbox

import (
	"context"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Store persists specs and sandbox records. Implementations live in store/sqlite and
// store/postgres and pass store/storetest. All methods are safe for concurrent use.
//
// ownerID scopes every read and write to one user: a sandbox of another user is ErrNotFound.
// An empty ownerID means "any owner" and is used only by the service itself (reconciliation).
type Store interface {
	// PutSpec inserts or replaces a spec.
	PutSpec(ctx context.Context, spec Spec) error
	// GetSpec returns ErrSpecNotFound when no spec has that id.
	GetSpec(ctx context.Context, id string) (Spec, error)
	// ListSpecs pages through specs ordered by id ascending.
	ListSpecs(ctx context.Context, q paging.Query) (specs []Spec, next string, err error)

	// CreateSandbox inserts a new record. With maxLive above 0 it first counts the owner's
	// STARTING and RUNNING records and returns ErrLimit, inserting nothing, when there are
	// maxLive already: the count and the insert are one atomic step, so that concurrent
	// starts, on any replica, never take more places than there are.
	CreateSandbox(ctx context.Context, sb Sandbox, maxLive int) error
	// GetSandbox returns ErrNotFound when the sandbox does not exist or belongs to someone else.
	GetSandbox(ctx context.Context, ownerID, id string) (Sandbox, error)
	// SandboxBySessionKeyHash returns the sandbox whose SessionKeyHash is hash (of any
	// owner), or ErrNotFound.
	SandboxBySessionKeyHash(ctx context.Context, hash []byte) (Sandbox, error)
	// SetSessionKeyHash writes SessionKeyHash of a record made without one; ErrNotFound when
	// the record is gone.
	SetSessionKeyHash(ctx context.Context, id string, hash []byte) error
	// ListSandboxes pages through the owner's sandboxes, newest first (created_at, then id).
	// The records carry no Instance: a listing never reaches a runtime, and GetSandbox reads
	// the whole record.
	ListSandboxes(ctx context.Context, ownerID string, q paging.Query) (sbs []Sandbox, next string, err error)
	// ListSandboxVersions and SandboxesAt are ListSandboxes in two halves, as the
	// conversation store's ListConversationVersions and ConversationsAt are its
	// ListConversations: the page's sandboxes as versions, then the owner's sandboxes named by
	// them, each as it was at its version where the store still holds that version, and
	// otherwise as it is now (left out when deleted since); never another owner's.
	ListSandboxVersions(ctx context.Context, ownerID string, q paging.Query) (ls []paging.Listed, next string, err error)
	SandboxesAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]Sandbox, error)
	// AllSandboxes returns every record of every owner, for reconciliation at start-up.
	AllSandboxes(ctx context.Context) ([]Sandbox, error)
	// LiveSandboxes returns the STARTING, RUNNING and PAUSED records of every owner (those
	// whose processes should exist), for the watcher, which reads them often: its cost must
	// not grow with the records of sandboxes long gone.
	LiveSandboxes(ctx context.Context) ([]Sandbox, error)
	// UpdateSandbox writes Status, Detail, Instance and UpdatedAt of sb if the stored status
	// is still prev (compare and set). It returns ErrState when the status moved meanwhile and
	// ErrNotFound when the record is gone.
	UpdateSandbox(ctx context.Context, sb Sandbox, prev Status) error
	// AdoptSandboxes records node as the node of backend's records that name none (those
	// made before nodes were recorded) and returns how many it adopted.
	AdoptSandboxes(ctx context.Context, backend, node string) (int, error)
	// DeleteSandbox removes the record. Deleting a missing record returns ErrNotFound.
	DeleteSandbox(ctx context.Context, id string) error
	// TouchSandboxes records that the sandboxes ids were in use at at (a later time than the
	// one stored wins).
	TouchSandboxes(ctx context.Context, ids []string, at time.Time) error
	// ClaimReconciler makes holder the replica that reconciles and watches backend's sandboxes
	// for ttl (the store's clock), if no other holds that role now, and reports whether it
	// does: for a backend every replica reaches, one replica at a time acts on its sandboxes.
	ClaimReconciler(ctx context.Context, backend, holder string, ttl time.Duration) (bool, error)
	// CountSandboxes counts the owner's sandboxes in any of the given statuses.
	CountSandboxes(ctx context.Context, ownerID string, statuses ...Status) (int, error)
}
