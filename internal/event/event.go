// Package event holds conversation events: their kinds and JSON shapes (those of OpenHands
// agent servers, so that OpenHands clients read them), the store interface of the append-only
// log, the in-process bus that tells live readers about appends once they are stored, and the
// feed (Follow), the one way to follow a log: replay from a point, then live, every event
// once and in order.
package event

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// ErrNotFound: no such event, or it belongs to another user's conversation.
var ErrNotFound = errors.New("event not found")

// Sources of events, as in OpenHands.
const (
	SourceUser        = "user"
	SourceAgent       = "agent"
	SourceEnvironment = "environment"
)

// Event is one entry of a conversation's log. Body is the full event JSON as clients see it
// (with kind, id, timestamp and source); the other fields are indexed copies. A stored event's
// Body is never changed, in place or otherwise: its readers share it (the subscribers of the
// bus, the store's event cache), so code that needs another body builds a new one.
type Event struct {
	ID             string
	ConversationID string
	// Seq orders events; the store assigns it on append, increasing across all events.
	Seq       int64
	Kind      string
	Source    string
	Timestamp time.Time
	Body      json.RawMessage
	// LLMText is the text the model was shown for an observation, kept beside the body because
	// an OpenHands observation object does not carry it exactly; empty for other kinds. It is
	// never sent to clients.
	LLMText string
}

// Filter narrows a search. Zero fields do not filter.
type Filter struct {
	ConversationID string
	// Kind is the short kind ("MessageEvent").
	Kind         string
	Source       string
	TimestampGTE *time.Time
	TimestampLT  *time.Time
	// Body keeps the MessageEvents whose BodyText contains it, ignoring case; events of
	// other kinds never match.
	Body string
	// AfterSeq keeps the events whose Seq is greater than it: those after a known event.
	AfterSeq int64
}

// Store persists events. Appends to one conversation are ordered; safe for concurrent use.
// ownerID scopes reads to the conversations of that user.
type Store interface {
	// AppendEvents appends in order and sets Seq on each element.
	AppendEvents(ctx context.Context, evs []Event) error
	// SearchEvents pages through events in Seq order (descending when desc).
	SearchEvents(ctx context.Context, ownerID string, f Filter, desc bool, q paging.Query) (evs []Event, next string, err error)
	CountEvents(ctx context.Context, ownerID string, f Filter) (int, error)
	// GetEvents returns the events with those ids, in the order asked; nil for missing ones.
	GetEvents(ctx context.Context, ownerID string, ids []string) ([]*Event, error)
	// ConversationEvents returns the conversation's events with Seq greater than afterSeq, in
	// Seq order, whoever owns it: the agent loop reads its log through it.
	ConversationEvents(ctx context.Context, conversationID string, afterSeq int64) ([]Event, error)
}
