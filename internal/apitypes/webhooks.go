package apitypes

import (
	"time"
)

// WebhookEventKind names a kind of event a webhook is told about, or * for every kind.
type WebhookEventKind string

// EnumValues lists the accepted values.
func (WebhookEventKind) EnumValues() []string {
	return []string{"*", "conversation.created", "conversation.start_failed", "conversation.status_changed",
		"conversation.finished", "conversation.waiting", "conversation.error",
		"sandbox.paused", "sandbox.resumed", "sandbox.deleted", "pull_request.opened"}
}

// WebhookCreateRequest is the body of POST /api/v1/webhooks.
type WebhookCreateRequest struct {
	URL            string             `json:"url" wire:"required,minlen=1,maxlen=2000" doc:"Where deliveries are POSTed: http or https. For users who are not admins, the URL policy refuses internal addresses."`
	Events         []WebhookEventKind `json:"events" wire:"required,minlen=1,maxlen=20" doc:"The kinds of event to deliver; * for every kind."`
	ConversationID *string            `json:"conversation_id" doc:"Only this conversation's events (and its sandbox's); absent: every conversation of the caller's."`
	Description    *string            `json:"description" wire:"maxlen=200"`
}

// WireStrict rejects unknown keys.
func (WebhookCreateRequest) WireStrict() {}

// Webhook is a registered endpoint, without its secret.
type Webhook struct {
	ID             string             `json:"id"`
	URL            string             `json:"url"`
	Events         []WebhookEventKind `json:"events"`
	ConversationID *string            `json:"conversation_id"`
	Description    string             `json:"description"`
	CreatedAt      time.Time          `json:"created_at"`
}

// WebhookCreated answers the creation: the webhook and its signing secret, shown this once.
type WebhookCreated struct {
	ID             string             `json:"id"`
	URL            string             `json:"url"`
	Events         []WebhookEventKind `json:"events"`
	ConversationID *string            `json:"conversation_id"`
	Description    string             `json:"description"`
	CreatedAt      time.Time          `json:"created_at"`
	Secret         string             `json:"secret" doc:"The key of the deliveries' HMAC-SHA256 signatures; shown only in this answer."`
}

// WebhookDeliveryStatus is where a delivery stands.
type WebhookDeliveryStatus string

// EnumValues lists the accepted values.
func (WebhookDeliveryStatus) EnumValues() []string { return []string{"pending", "delivered", "failed"} }

// WebhookDelivery is one event sent (or to be sent) to one webhook.
type WebhookDelivery struct {
	ID            string                `json:"id" doc:"The delivery's id, sent as X-Agentd-Delivery: the same on every attempt and redelivery, for the receiver to drop duplicates."`
	WebhookID     string                `json:"webhook_id"`
	Event         WebhookEventKind      `json:"event"`
	Status        WebhookDeliveryStatus `json:"status" doc:"pending (waiting for its next attempt), delivered (a 2xx answer), failed (no 2xx answer before the retries ran out)."`
	Attempts      int                   `json:"attempts"`
	ResponseCode  *int                  `json:"response_code" doc:"The status of the last attempt's answer; null when it got none."`
	Error         *string               `json:"error" doc:"Why the last attempt failed, when it did."`
	CreatedAt     time.Time             `json:"created_at"`
	UpdatedAt     time.Time             `json:"updated_at"`
	NextAttemptAt *time.Time            `json:"next_attempt_at" doc:"When a pending delivery is tried next."`
	Payload       Event                 `json:"payload" doc:"The body that is POSTed."`
}

// WebhookDeliveryPage is a page of deliveries, newest first.
type WebhookDeliveryPage struct {
	Items      []WebhookDelivery `json:"items"`
	NextPageID *string           `json:"next_page_id"`
}

// WebhookDeliveryQuery filters GET /api/v1/webhooks/{webhook_id}/deliveries.
type WebhookDeliveryQuery struct {
	Status *WebhookDeliveryStatus `query:"status"`
	PageID string                 `query:"page_id"`
	Limit  int                    `query:"limit" wire:"min=1,max=100,default=20"`
}
