package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// pendingContent is how a pending message's content is stored.
type pendingContent struct {
	Text      string   `json:"text"`
	ImageURLs []string `json:"image_urls,omitempty"`
}

func (s *Store) AddPendingMessage(ctx context.Context, ownerID string, m conversation.PendingMessage, max int) (int, error) {
	if err := checkTimes(m.CreatedAt); err != nil {
		return 0, fmt.Errorf("add pending message: %w", err)
	}
	content, err := jsonArg(pendingContent{Text: m.Message.Text, ImageURLs: m.Message.ImageURLs})
	if err != nil {
		return 0, fmt.Errorf("add pending message: %w", err)
	}
	var pos int
	err = s.write(ctx, func(tx *sql.Tx) error {
		// The conversation's latest start task decides, in the transaction that queues: the
		// task's READY is saved either before (the message is refused and sent instead) or
		// after (the delivery that follows READY finds it).
		var task sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT (SELECT status FROM start_tasks
			WHERE conversation_id = c.id AND owner_id = c.owner_id ORDER BY created_at DESC, id DESC LIMIT 1)
			FROM conversations c WHERE c.id = ? AND c.owner_id = ?`, m.ConversationID, ownerID).Scan(&task)
		if errors.Is(err, sql.ErrNoRows) {
			return conversation.ErrNotFound
		}
		if err != nil {
			return err
		}
		if !task.Valid || conversation.TaskStatus(task.String) == conversation.TaskReady {
			return conversation.ErrReady
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pending_messages WHERE conversation_id = ?`, m.ConversationID).Scan(&pos); err != nil {
			return err
		}
		if pos >= max {
			return conversation.ErrTooManyPending
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO pending_messages (id, conversation_id, role, content, created_at) VALUES (?, ?, 'user', ?, ?)`,
			m.ID, m.ConversationID, content, nanos(m.CreatedAt))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("add pending message to conversation %s: %w", m.ConversationID, err)
	}
	return pos + 1, nil
}

func scanPending(sc scanner) (conversation.PendingMessage, error) {
	var m conversation.PendingMessage
	var content string
	var created int64
	if err := sc.Scan(&m.ID, &m.ConversationID, &content, &created); err != nil {
		return m, err
	}
	var pc pendingContent
	if err := json.Unmarshal([]byte(content), &pc); err != nil {
		return m, fmt.Errorf("decode pending message %s: %w", m.ID, err)
	}
	m.Message = conversation.Message{Text: pc.Text, ImageURLs: pc.ImageURLs}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

func (s *Store) PendingMessages(ctx context.Context, conversationID string) ([]conversation.PendingMessage, error) {
	ms, err := collect(ctx, s.r, scanPending,
		`SELECT id, conversation_id, content, created_at FROM pending_messages WHERE conversation_id = ? ORDER BY seq`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("pending messages of conversation %s: %w", conversationID, err)
	}
	return ms, nil
}

func (s *Store) DeliverPendingMessages(ctx context.Context, conversationID string, ids []string, evs []event.Event, u conversation.StateUpdate) error {
	if err := checkTimes(u.UpdatedAt); err != nil {
		return fmt.Errorf("deliver pending messages of conversation %s: %w", conversationID, err)
	}
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `DELETE FROM pending_messages WHERE id = ? AND conversation_id = ?`, id, conversationID)
			if err != nil {
				return err
			}
			// Delivered already (by another delivery that won): deliver nothing twice.
			if err := mustAffect(res, conversation.ErrNotFound); err != nil {
				return err
			}
		}
		var err error
		seqs, _, err = s.recordEvents(ctx, tx, conversationID, evs, u)
		return err
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
	vs, err := collect(ctx, s.r, scanView, viewSelect+
		` WHERE EXISTS (SELECT 1 FROM pending_messages p WHERE p.conversation_id = c.id) ORDER BY c.created_at, c.id`)
	if err != nil {
		return nil, fmt.Errorf("conversations with pending messages: %w", err)
	}
	out := make([]conversation.Conversation, len(vs))
	for i, v := range vs {
		out[i] = v.Conversation
	}
	return out, nil
}
