package conversation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/event"
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

// QueueMessage queues a message until the conversation is ready and returns its id and
// place in the queue. A conversation that is ready already gets the message at once (the
// agent answers it), and the place is 0.
func (s *Service) QueueMessage(ctx context.Context, ownerID, convID string, m Message) (string, int, error) {
	pm := PendingMessage{ID: s.o.NewEventID(), ConversationID: convID, Message: m, CreatedAt: s.o.Now().UTC()}
	pos, err := s.o.Store.AddPendingMessage(ctx, ownerID, pm, MaxPendingMessages)
	if errors.Is(err, ErrReady) {
		return pm.ID, 0, s.SendMessage(ctx, ownerID, convID, m, true)
	}
	if err != nil {
		return "", 0, err
	}
	return pm.ID, pos, nil
}

// deliverPending appends the conversation's pending messages to its log, in the order they
// were sent. It runs once the start task is READY (and on resume, for a process that stopped
// in between); a message is delivered once even when two deliveries race.
func (s *Service) deliverPending(ctx context.Context, c Conversation) error {
	_, err := s.deliverPendingOf(ctx, c)
	return err
}

// deliverPendingOf is deliverPending that reports whether it delivered any message.
func (s *Service) deliverPendingOf(ctx context.Context, c Conversation) (bool, error) {
	pms, err := s.o.Store.PendingMessages(ctx, c.ID)
	if err != nil || len(pms) == 0 {
		return false, err
	}
	ids := make([]string, len(pms))
	evs := make([]event.Event, len(pms))
	for i, pm := range pms {
		ev, err := event.NewUserMessage(s.o.NewEventID(), s.o.Now(), pm.Message.Text, pm.Message.ImageURLs)
		if err != nil {
			return false, err
		}
		ev.ConversationID = c.ID
		ids[i], evs[i] = pm.ID, ev
	}
	if err := s.redact(ctx, c, evs); err != nil {
		return false, fmt.Errorf("deliver pending messages: %w", err)
	}
	err = s.o.Bus.Record(c.ID, func() error {
		return s.o.Store.DeliverPendingMessages(ctx, c.ID, ids, evs, StateUpdate{UpdatedAt: s.o.Now().UTC()})
	}, evs)
	return err == nil, err
}
