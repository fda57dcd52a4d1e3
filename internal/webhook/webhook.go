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
	// Endpoint is the scheme, host and port of the webhook's URL (EndpointOf): what the caps
	// of attempts under way, and the pause of an endpoint that keeps timing out, are per.
	Endpoint string
	// EndpointTimeouts is, in a claimed delivery, how many attempts to its endpoint timed out
	// in a row before this one.
	EndpointTimeouts int
}

// Claim is what a dispatcher asks the store for: up to Limit pending deliveries due at Now,
// each leased until LeaseUntil, such that no user has more than PerUser, nor any endpoint
// of a user's more than PerEndpoint, attempts under way (claimed and not yet recorded, their
// lease not lapsed) counting those claimed now. Zero caps bound nothing. Deliveries to an
// endpoint paused for its timeouts are not due before the pause ends.
type Claim struct {
	Now, LeaseUntil      time.Time
	Limit                int
	PerUser, PerEndpoint int
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
	// ClaimDeliveries claims what c asks for, in one transaction that moves the deliveries'
	// NextAttemptAt to c.LeaseUntil and marks them under way until then, so that no other
	// claim takes them, nor counts them out, while they are tried. Users take turns: each
	// user's first due delivery comes before any user's second, and so on, oldest due first
	// within a turn. Claims of several processes (replicas) at once never exceed the caps
	// together, and never take the same delivery.
	ClaimDeliveries(ctx context.Context, c Claim) ([]Delivery, error)
	// NextDeliveryAt is the earliest time a pending delivery not under way falls due, its
	// endpoint's pause included; zero when none.
	NextDeliveryAt(ctx context.Context) (time.Time, error)
	// UpdateDelivery writes Status, Attempts, ResponseCode, Error, UpdatedAt, NextAttemptAt
	// and RetryUntil, and ends the attempt under way. ErrNotFound when it is gone (its webhook
	// was deleted).
	UpdateDelivery(ctx context.Context, d Delivery) error
	// EndpointTimedOut counts an attempt to the owner's endpoint that got no answer in time:
	// its timeouts in a row grow by one, to n, and no delivery to it is due before
	// now+pause(n).
	EndpointTimedOut(ctx context.Context, ownerID, endpoint string, now time.Time, pause func(n int) time.Duration) error
	// EndpointAnswered forgets the timeouts of the owner's endpoint: it answered.
	EndpointAnswered(ctx context.Context, ownerID, endpoint string) error
	// PruneDeliveries removes the delivered and failed deliveries last updated before t, and
	// the timeouts of endpoints whose pause ended before t.
	PruneDeliveries(ctx context.Context, before time.Time) (int, error)
}
