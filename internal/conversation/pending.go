package conversation

import (
	"errors"
	"time"
)

// Pending messages: messages a client sends before the conversation's start task is READY.
// They are stored apart from the event log and appended to it, in the order sent, once the
// task is READY; a restart in between loses none of them.

// MaxPendingMessages is how many messages may wait for one conversation, as in OpenHands.
const MaxPendingMessages = 10

var (
	// ErrReady: the conversation is ready, so a message is sent rather than queued.
	ErrReady = errors.New("the conversation is ready")
	// ErrTooManyPending: MaxPendingMessages wait already.
	ErrTooManyPending = errors.New("too many pending messages")
)

// PendingMessage is a message waiting for its conversation to be ready.
type PendingMessage struct {
	ID             string
	ConversationID string
	Message        Message
	CreatedAt      time.Time
}
