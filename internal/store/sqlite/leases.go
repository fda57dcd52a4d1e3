package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
)

// Leases and commands (conversation.Lease). One process writes a SQLite store, so its leases
// matter only across its restarts; they count time by this machine's clock.

func (s *Store) ClaimConversation(ctx context.Context, id, holder, node string, ttl time.Duration) (bool, error) {
	now := time.Now()
	var claimed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return conversation.ErrNotFound
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO conversation_leases (conversation_id, holder, node, expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (conversation_id) DO UPDATE SET holder = excluded.holder, node = excluded.node, expires_at = excluded.expires_at
			WHERE conversation_leases.holder = excluded.holder OR conversation_leases.expires_at < ?`,
			id, holder, node, nanos(now.Add(ttl)), nanos(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim conversation %s: %w", id, err)
	}
	return claimed, nil
}

func (s *Store) RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE conversation_leases SET expires_at = ? WHERE holder = ?`,
			nanos(time.Now().Add(ttl)), holder); err != nil {
			return err
		}
		var err error
		ids, err = collect(ctx, tx, func(sc scanner) (string, error) {
			var id string
			err := sc.Scan(&id)
			return id, err
		}, `SELECT conversation_id FROM conversation_leases WHERE holder = ? ORDER BY conversation_id`, holder)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	return ids, nil
}

func (s *Store) ReleaseConversation(ctx context.Context, id, holder string) error {
	if _, err := s.one.ExecContext(ctx, `DELETE FROM conversation_leases WHERE conversation_id = ? AND holder = ?`, id, holder); err != nil {
		return fmt.Errorf("release conversation %s: %w", id, err)
	}
	return nil
}

func (s *Store) ReleaseNodeLeases(ctx context.Context, node, except string) (int, error) {
	res, err := s.one.ExecContext(ctx, `DELETE FROM conversation_leases WHERE node = ? AND holder <> ?`, node, except)
	if err != nil {
		return 0, fmt.Errorf("release the leases of node %s: %w", node, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *Store) ConversationLease(ctx context.Context, id string) (conversation.Lease, error) {
	var l conversation.Lease
	var expires int64
	err := s.r.QueryRowContext(ctx, `SELECT holder, node, expires_at FROM conversation_leases WHERE conversation_id = ?`, id).
		Scan(&l.Holder, &l.Node, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return conversation.Lease{}, nil
	}
	if err != nil {
		return conversation.Lease{}, fmt.Errorf("lease of conversation %s: %w", id, err)
	}
	l.Expires = fromNanos(expires)
	return l, nil
}

// unownedSQL finds the conversations that need a runner through the indexes of each reason
// (the partial indexes of running conversations and unfinished start tasks; the small tables
// of pending messages and commands), then keeps those without a live lease. The sandbox is
// the conversation's, else its latest start task's.
const unownedSQL = `WITH work (id) AS (
		SELECT id FROM conversations WHERE execution_status = 'running'
		UNION SELECT conversation_id FROM start_tasks WHERE status NOT IN ('READY', 'ERROR')
		UNION SELECT conversation_id FROM pending_messages
		UNION SELECT conversation_id FROM conversation_commands)
	SELECT c.id, c.owner_id, coalesce(s.node, ts.node, ''), coalesce(s.backend, ts.backend, '')
	FROM work w
	JOIN conversations c ON c.id = w.id
	LEFT JOIN conversation_leases l ON l.conversation_id = c.id
	LEFT JOIN sandboxes s ON c.sandbox_id <> '' AND s.id = c.sandbox_id
	LEFT JOIN sandboxes ts ON c.sandbox_id = '' AND ts.id = (SELECT t.sandbox_id FROM start_tasks t
		WHERE t.conversation_id = c.id ORDER BY t.created_at DESC, t.id DESC LIMIT 1)
	WHERE l.conversation_id IS NULL OR l.expires_at < ?
	ORDER BY c.created_at, c.id LIMIT ?`

func (s *Store) UnownedConversations(ctx context.Context, limit int) ([]conversation.Unowned, error) {
	us, err := collect(ctx, s.r, func(sc scanner) (conversation.Unowned, error) {
		var u conversation.Unowned
		err := sc.Scan(&u.ID, &u.OwnerID, &u.Node, &u.Backend)
		return u, err
	}, unownedSQL, nanos(time.Now()), limit)
	if err != nil {
		return nil, fmt.Errorf("unowned conversations: %w", err)
	}
	return us, nil
}

func (s *Store) AddCommand(ctx context.Context, id, kind, self string) (string, error) {
	var holder string
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT holder FROM conversation_leases WHERE conversation_id = ? AND holder <> ? AND expires_at >= ?`,
			id, self, nanos(time.Now())).Scan(&holder)
		if errors.Is(err, sql.ErrNoRows) {
			holder, err = "", nil
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO conversation_commands (conversation_id, kind, created_at) VALUES (?, ?, ?)`,
			id, kind, nanos(time.Now()))
		if isForeignKey(err) {
			err = conversation.ErrNotFound
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("command %s for conversation %s: %w", kind, id, err)
	}
	return holder, nil
}

// TakeCommands looks on a reader first: every replica looks every second, and an idle one
// finds nothing, which needs no write.
func (s *Store) TakeCommands(ctx context.Context, holder string) ([]conversation.Command, error) {
	var any bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM conversation_commands k
		JOIN conversation_leases l ON l.conversation_id = k.conversation_id AND l.holder = ?)`, holder).Scan(&any); err != nil {
		return nil, fmt.Errorf("take commands: %w", err)
	}
	if !any {
		return nil, nil
	}
	var cmds []conversation.Command
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		cmds, err = collect(ctx, tx, func(sc scanner) (conversation.Command, error) {
			var c conversation.Command
			err := sc.Scan(&c.ConversationID, &c.OwnerID, &c.Kind)
			return c, err
		}, `SELECT k.conversation_id, c.owner_id, k.kind FROM conversation_commands k
			JOIN conversation_leases l ON l.conversation_id = k.conversation_id AND l.holder = ?
			JOIN conversations c ON c.id = k.conversation_id
			ORDER BY k.seq`, holder)
		if err != nil || len(cmds) == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM conversation_commands WHERE conversation_id IN
			(SELECT conversation_id FROM conversation_leases WHERE holder = ?)`, holder)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("take commands: %w", err)
	}
	return cmds, nil
}

// checkHolder fails with conversation.ErrLeaseLost unless holder has the conversation's
// lease, and with conversation.ErrNotFound when the conversation is gone (deleted while its
// agent ran), as the PostgreSQL store's row lock does; tx is the writer's transaction of the
// append it guards.
func (s *Store) checkHolder(ctx context.Context, tx *sql.Tx, id, holder string) error {
	var has sql.NullString
	err := s.w.queryRowIn(ctx, tx, `SELECT l.holder FROM conversations c
		LEFT JOIN conversation_leases l ON l.conversation_id = c.id WHERE c.id = ?`, id).Scan(&has)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return conversation.ErrNotFound
	case err == nil && has.String != holder:
		return conversation.ErrLeaseLost
	}
	return err
}

func (s *Store) SecretsRevision(ctx context.Context, userID string) (int64, error) {
	var rev int64
	err := s.r.QueryRowContext(ctx, `SELECT rev FROM secret_revisions WHERE user_id = ?`, userID).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("secrets revision of user %s: %w", userID, err)
	}
	return rev, nil
}

func (s *Store) BumpSecretsRevision(ctx context.Context, userID string) error {
	if _, err := s.one.ExecContext(ctx, `INSERT INTO secret_revisions (user_id, rev) VALUES (?, 1)
		ON CONFLICT (user_id) DO UPDATE SET rev = rev + 1`, userID); err != nil {
		return fmt.Errorf("bump the secrets revision of user %s: %w", userID, err)
	}
	return nil
}

func (s *Store) Heartbeat(ctx context.Context, r conversation.Replica, ttl time.Duration) error {
	now := time.Now()
	if _, err := s.one.ExecContext(ctx, `INSERT INTO replicas (id, node, started_at, expires_at, key_ids, active_key) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at, key_ids = excluded.key_ids, active_key = excluded.active_key`,
		r.ID, r.Node, nanos(now), nanos(now.Add(ttl)), strings.Join(r.Keys, ","), r.ActiveKey); err != nil {
		return fmt.Errorf("heartbeat of replica %s: %w", r.ID, err)
	}
	return nil
}

func (s *Store) LiveReplicas(ctx context.Context) ([]conversation.Replica, error) {
	rs, err := collect(ctx, s.r, func(sc scanner) (conversation.Replica, error) {
		var r conversation.Replica
		var keys string
		err := sc.Scan(&r.ID, &r.Node, &keys, &r.ActiveKey)
		if keys != "" {
			r.Keys = strings.Split(keys, ",")
		}
		return r, err
	}, `SELECT id, node, key_ids, active_key FROM replicas WHERE expires_at >= ? ORDER BY id`, nanos(time.Now()))
	if err != nil {
		return nil, fmt.Errorf("live replicas: %w", err)
	}
	return rs, nil
}

func (s *Store) RemoveReplica(ctx context.Context, replica string) error {
	if _, err := s.one.ExecContext(ctx, `DELETE FROM replicas WHERE id = ? OR expires_at < ?`, replica, nanos(time.Now().Add(-time.Hour))); err != nil {
		return fmt.Errorf("remove replica %s: %w", replica, err)
	}
	return nil
}
