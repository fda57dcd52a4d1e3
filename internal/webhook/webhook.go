// Package webhook tells users' endpoints about their conversations and sandboxes: users
// register webhooks (a URL, the kinds of event, optionally one conversation), the services
// that own the transitions report them (Notify), and a dispatcher owned by the Service POSTs
// each delivery, signed with HMAC-SHA256 under the webhook's secret, retrying with
// exponential backoff for a bounded time. Deliveries are stored before they are sent, so a
// restart resumes them; a delivery cut short by a restart is sent again with the same id.
package webhook

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Kinds of event a webhook can be told about.
const (
	KindConversationCreated       = "conversation.created"
	KindConversationStartFailed   = "conversation.start_failed"
	KindConversationStatusChanged = "conversation.status_changed"
	KindConversationFinished      = "conversation.finished"
	KindConversationWaiting       = "conversation.waiting"
	KindConversationError         = "conversation.error"
	KindSandboxPaused             = "sandbox.paused"
	KindSandboxResumed            = "sandbox.resumed"
	KindSandboxDeleted            = "sandbox.deleted"
	KindPullRequestOpened         = "pull_request.opened"
	// KindAll subscribes a webhook to every kind.
	KindAll = "*"
)

// Kinds lists every kind, in documentation order.
var Kinds = []string{KindConversationCreated, KindConversationStartFailed, KindConversationStatusChanged,
	KindConversationFinished, KindConversationWaiting, KindConversationError,
	KindSandboxPaused, KindSandboxResumed, KindSandboxDeleted, KindPullRequestOpened}

// Sentinel errors.
var (
	ErrNotFound = errors.New("webhook not found")
	// ErrLimit: the user has as many webhooks as allowed.
	ErrLimit = errors.New("too many webhooks")
)

// MaxPerUser bounds a user's webhooks.
const MaxPerUser = 20

// Event is a transition a service reports. ConversationIDs scope it: a webhook for one
// conversation gets the events that name it.
type Event struct {
	Kind    string
	OwnerID string
	// ConversationIDs are the conversations the event is about: one for a conversation's
	// event, those that use the sandbox for a sandbox's (filled in by the Service).
	ConversationIDs []string
	SandboxID       string
	At              time.Time
	// Data is the kind's own fields, sent as the payload's data (with conversation_id or
	// conversation_ids, and sandbox_id, added).
	Data map[string]any
}

// Webhook is a registered endpoint. Its secret is sealed.
type Webhook struct {
	ID      string
	OwnerID string
	URL     string
	Kinds   []string
	// ConversationID limits the webhook to one conversation; "" means all of the owner's.
	ConversationID string
	Description    string
	SecretSealed   []byte
	CreatedAt      time.Time
}

// Wants reports whether the webhook is to be told about ev.
func (w Webhook) Wants(ev Event) bool {
	if !slices.Contains(w.Kinds, KindAll) && !slices.Contains(w.Kinds, ev.Kind) {
		return false
	}
	return w.ConversationID == "" || slices.Contains(ev.ConversationIDs, w.ConversationID)
}

// Status is where a delivery stands.
type Status string

// Delivery statuses.
const (
	StatusPending   Status = "pending"
	StatusDelivered Status = "delivered"
	StatusFailed    Status = "failed"
)

// Delivery is one event for one webhook. Its ID is sent with every attempt, so that the
// receiver can drop a delivery it has had already.
type Delivery struct {
	ID        string
	WebhookID string
	OwnerID   string
	Kind      string
	// Payload is the JSON body POSTed, the same on every attempt.
	Payload  []byte
	Status   Status
	Attempts int
	// ResponseCode is the last attempt's answer; 0 when it got none.
	ResponseCode int
	// Error says why the last attempt failed; "" when it did not.
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// NextAttemptAt is when a pending delivery is due (or, while an attempt is under way,
	// when its claim lapses); zero for the others.
	NextAttemptAt time.Time
	// RetryUntil ends the retries: a failed attempt whose next one would come later marks the
	// delivery failed.
	RetryUntil time.Time
}

// Store persists webhooks and deliveries. Safe for concurrent use. ownerID scopes the calls
// that take it: another user's rows are ErrNotFound and never listed.
type Store interface {
	// CreateWebhook stores w unless its owner has max webhooks already (ErrLimit).
	CreateWebhook(ctx context.Context, w Webhook, max int) error
	GetWebhook(ctx context.Context, ownerID, id string) (Webhook, error)
	// ListWebhooks returns the owner's webhooks, oldest first.
	ListWebhooks(ctx context.Context, ownerID string) ([]Webhook, error)
	// DeleteWebhook removes the webhook and its deliveries.
	DeleteWebhook(ctx context.Context, ownerID, id string) error

	// CreateDeliveries stores new deliveries, all or none.
	CreateDeliveries(ctx context.Context, ds []Delivery) error
	GetDelivery(ctx context.Context, ownerID, webhookID, id string) (Delivery, error)
	// ListDeliveries pages through a webhook's deliveries, newest first; status "" lists all.
	ListDeliveries(ctx context.Context, ownerID, webhookID string, status Status, q paging.Query) ([]Delivery, string, error)
	// ClaimDeliveries returns up to limit pending deliveries due at now, oldest due first,
	// and moves their NextAttemptAt to leaseUntil in the same transaction, so that no other
	// claim takes them while they are tried.
	ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]Delivery, error)
	// NextDeliveryAt is the earliest NextAttemptAt of the pending deliveries; zero when none.
	NextDeliveryAt(ctx context.Context) (time.Time, error)
	// UpdateDelivery writes Status, Attempts, ResponseCode, Error, UpdatedAt, NextAttemptAt
	// and RetryUntil. ErrNotFound when it is gone (its webhook was deleted).
	UpdateDelivery(ctx context.Context, d Delivery) error
	// PruneDeliveries removes the delivered and failed deliveries last updated before t.
	PruneDeliveries(ctx context.Context, before time.Time) (int, error)
}
