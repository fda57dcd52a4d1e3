package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// pendingContent is how a pending message's content is stored.
type pendingContent struct {
	Text      string   `json:"text"`
	ImageURLs []string `json:"image_urls,omitempty"`
}

// AddPendingMessage queues under two locks, taken in the transaction that queues. The
// conversation's row lock makes the adders of one conversation follow one another, so that
// each counts the messages of those before it: at READ COMMITTED, two could otherwise both
// count max-1 and both insert. A share lock on the conversation's latest start task orders
// the queueing with the task's READY: an UpdateStartTask that saves READY waits for the
// message to commit, so the delivery that follows READY finds it; or, if READY came first,
// the message is refused (ErrReady) and sent instead. Either way no message is left waiting
// for a delivery that has come and gone. The locks, the count and the insert go in one batch
// with the BEGIN (Store.writeBatch); a message that the answers refuse is rolled back.
func (s *Store) AddPendingMessage(ctx context.Context, ownerID string, m conversation.PendingMessage, max int) (int, error) {
	if err := checkTimes(m.CreatedAt); err != nil {
		return 0, fmt.Errorf("add pending message: %w", err)
	}
	content, err := jsonArg(pendingContent{Text: m.Message.Text, ImageURLs: m.Message.ImageURLs})
	if err != nil {
		return 0, fmt.Errorf("add pending message: %w", err)
	}
	var pos int
	err = s.writeBatch(ctx, func(b *pgx.Batch) error {
		b.Queue(`SELECT 1 FROM conversations WHERE id = $1 AND owner_id = $2 FOR NO KEY UPDATE`, m.ConversationID, ownerID)
		b.Queue(`SELECT status FROM start_tasks WHERE conversation_id = $1 AND owner_id = $2
			ORDER BY created_at DESC, id DESC LIMIT 1 FOR SHARE`, m.ConversationID, ownerID)
		b.Queue(`SELECT count(*) FROM pending_messages WHERE conversation_id = $1`, m.ConversationID)
		b.Queue(`INSERT INTO pending_messages (id, conversation_id, role, content, created_at) VALUES ($1, $2, 'user', $3, $4)`,
			m.ID, m.ConversationID, content, m.CreatedAt)
		return nil
	}, func(br pgx.BatchResults) error {
		var one int
		err := br.QueryRow().Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return conversation.ErrNotFound
		}
		if err != nil {
			return err
		}
		var task string
		err = br.QueryRow().Scan(&task)
		if errors.Is(err, pgx.ErrNoRows) || conversation.TaskStatus(task) == conversation.TaskReady {
			return conversation.ErrReady
		}
		if err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&pos); err != nil {
			return err
		}
		if pos >= max {
			return conversation.ErrTooManyPending
		}
		_, err = br.Exec()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("add pending message to conversation %s: %w", m.ConversationID, err)
	}
	return pos + 1, nil
}

func scanPending(row pgx.Row) (conversation.PendingMessage, error) {
	var m conversation.PendingMessage
	var content string
	if err := row.Scan(&m.ID, &m.ConversationID, &content, &m.CreatedAt); err != nil {
		return m, err
	}
	var pc pendingContent
	if err := json.Unmarshal([]byte(content), &pc); err != nil {
		return m, fmt.Errorf("decode pending message %s: %w", m.ID, err)
	}
	m.Message = conversation.Message{Text: pc.Text, ImageURLs: pc.ImageURLs}
	return m, nil
}

func (s *Store) PendingMessages(ctx context.Context, conversationID string) ([]conversation.PendingMessage, error) {
	ms, err := collect(ctx, s.pool, scanPending,
		`SELECT id, conversation_id, content, created_at FROM pending_messages WHERE conversation_id = $1 ORDER BY seq`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("pending messages of conversation %s: %w", conversationID, err)
	}
	return ms, nil
}

// DeliverPendingMessages deletes the messages and appends their events in one transaction,
// under the conversation's row lock, taken first as every writer of the conversation takes
// it (a lock taken after the messages' rows could deadlock with DeleteConversation); the
// lock, the deletes and the record go in one batch with the BEGIN (Store.record). Of two
// deliveries of the same messages, the second waits for the first and then finds them gone:
// ErrNotFound, and nothing of it is kept.
func (s *Store) DeliverPendingMessages(ctx context.Context, conversationID string, ids []string, evs []event.Event, u conversation.StateUpdate) error {
	if err := checkTimes(u.UpdatedAt); err != nil {
		return fmt.Errorf("deliver pending messages of conversation %s: %w", conversationID, err)
	}
	seqs, _, err := s.record(ctx, conversationID, evs, u, func(b *pgx.Batch) {
		for _, id := range ids {
			b.Queue(`DELETE FROM pending_messages WHERE id = $1 AND conversation_id = $2`, id, conversationID)
		}
	}, func(br pgx.BatchResults) error {
		for range ids {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			// Delivered already (by another delivery that won): deliver nothing twice.
			if err := mustAffect(tag, conversation.ErrNotFound); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deliver pending messages of conversation %s: %w", conversationID, err)
	}
	for i := range evs {
		evs[i].Seq = seqs[i]
	}
	return nil
}

func (s *Store) ConversationsWithPendingMessages(ctx context.Context) ([]conversation.Conversation, error) {
	vs, err := collect(ctx, s.pool, scanView, viewSelect+
		` WHERE EXISTS (SELECT 1 FROM pending_messages p WHERE p.conversation_id = c.id) ORDER BY c.created_at, c.id`)
	if err != nil {
		return nil, fmt.Errorf("conversations with pending messages: %w", err)
	}
	return conversations(vs), nil
}
