package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
)

// Leases and commands (conversation.Lease). Expiry is the database's clock (now()), not the
// replicas': their clocks may disagree, the database's is one.

func (s *Store) ClaimConversation(ctx context.Context, id, holder, node string, ttl time.Duration) (bool, error) {
	var claimed bool
	err := s.write(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return conversation.ErrNotFound
		}
		if err != nil {
			return err
		}
		// One statement: of two replicas claiming at once, the second's ON CONFLICT waits for
		// the first's row and then finds it live and someone else's.
		tag, err := tx.Exec(ctx, `INSERT INTO conversation_leases (conversation_id, holder, node, expires_at)
			VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')
			ON CONFLICT (conversation_id) DO UPDATE SET holder = excluded.holder, node = excluded.node, expires_at = excluded.expires_at
			WHERE conversation_leases.holder = excluded.holder OR conversation_leases.expires_at < now()`,
			id, holder, node, ttl.Microseconds())
		claimed = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim conversation %s: %w", id, err)
	}
	return claimed, nil
}

func (s *Store) RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]string, error) {
	ids, err := collect(ctx, s.pool, func(row pgx.Row) (string, error) {
		var id string
		err := row.Scan(&id)
		return id, err
	}, `UPDATE conversation_leases SET expires_at = now() + $2 * interval '1 microsecond' WHERE holder = $1 RETURNING conversation_id`,
		holder, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	return ids, nil
}

func (s *Store) ReleaseConversation(ctx context.Context, id, holder string) error {
	if _, err := s.exec(ctx, `DELETE FROM conversation_leases WHERE conversation_id = $1 AND holder = $2`, id, holder); err != nil {
		return fmt.Errorf("release conversation %s: %w", id, err)
	}
	return nil
}

func (s *Store) ReleaseNodeLeases(ctx context.Context, node, except string) (int, error) {
	tag, err := s.exec(ctx, `DELETE FROM conversation_leases WHERE node = $1 AND holder <> $2`, node, except)
	if err != nil {
		return 0, fmt.Errorf("release the leases of node %s: %w", node, err)
	}
	return int(tag.RowsAffected()), nil
}

func (s *Store) ConversationLease(ctx context.Context, id string) (conversation.Lease, error) {
	var l conversation.Lease
	err := s.pool.QueryRow(ctx, `SELECT holder, node, expires_at FROM conversation_leases WHERE conversation_id = $1`, id).
		Scan(&l.Holder, &l.Node, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return conversation.Lease{}, nil
	}
	if err != nil {
		return conversation.Lease{}, fmt.Errorf("lease of conversation %s: %w", id, err)
	}
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
	WHERE l.conversation_id IS NULL OR l.expires_at < now()
	ORDER BY c.created_at, c.id LIMIT $1`

func (s *Store) UnownedConversations(ctx context.Context, limit int) ([]conversation.Unowned, error) {
	us, err := collect(ctx, s.pool, func(row pgx.Row) (conversation.Unowned, error) {
		var u conversation.Unowned
		err := row.Scan(&u.ID, &u.OwnerID, &u.Node, &u.Backend)
		return u, err
	}, unownedSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("unowned conversations: %w", err)
	}
	return us, nil
}

// AddCommand reads the holder under a lock of the lease's row (FOR SHARE) held until the
// insert commits: a claim by another replica comes after, and takes the command with the
// lease.
func (s *Store) AddCommand(ctx context.Context, id, kind, self string) (string, error) {
	var holder string
	err := s.write(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT holder FROM conversation_leases
			WHERE conversation_id = $1 AND holder <> $2 AND expires_at >= now() FOR SHARE`, id, self).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) {
			holder, err = "", nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO conversation_commands (conversation_id, kind, created_at) VALUES ($1, $2, now())`, id, kind)
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

func (s *Store) TakeCommands(ctx context.Context, holder string) ([]conversation.Command, error) {
	cmds, err := collect(ctx, s.pool, func(row pgx.Row) (conversation.Command, error) {
		var c conversation.Command
		err := row.Scan(&c.ConversationID, &c.OwnerID, &c.Kind)
		return c, err
	}, `WITH taken AS (
			DELETE FROM conversation_commands k USING conversation_leases l
			WHERE l.conversation_id = k.conversation_id AND l.holder = $1
			RETURNING k.seq, k.conversation_id, k.kind)
		SELECT t.conversation_id, c.owner_id, t.kind FROM taken t JOIN conversations c ON c.id = t.conversation_id
		ORDER BY t.seq`, holder)
	if err != nil {
		return nil, fmt.Errorf("take commands: %w", err)
	}
	return cmds, nil
}

func (s *Store) SecretsRevision(ctx context.Context, userID string) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, `SELECT rev FROM secret_revisions WHERE user_id = $1`, userID).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("secrets revision of user %s: %w", userID, err)
	}
	return rev, nil
}

func (s *Store) BumpSecretsRevision(ctx context.Context, userID string) error {
	if _, err := s.exec(ctx, `INSERT INTO secret_revisions (user_id, rev) VALUES ($1, 1)
		ON CONFLICT (user_id) DO UPDATE SET rev = secret_revisions.rev + 1`, userID); err != nil {
		return fmt.Errorf("bump the secrets revision of user %s: %w", userID, err)
	}
	return nil
}

func (s *Store) Heartbeat(ctx context.Context, r conversation.Replica, ttl time.Duration) error {
	if _, err := s.exec(ctx, `INSERT INTO replicas (id, node, started_at, expires_at, key_ids, active_key)
		VALUES ($1, $2, now(), now() + $3 * interval '1 microsecond', $4, $5)
		ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at, key_ids = excluded.key_ids, active_key = excluded.active_key`,
		r.ID, r.Node, ttl.Microseconds(), strings.Join(r.Keys, ","), r.ActiveKey); err != nil {
		return fmt.Errorf("heartbeat of replica %s: %w", r.ID, err)
	}
	return nil
}

func (s *Store) LiveReplicas(ctx context.Context) ([]conversation.Replica, error) {
	rs, err := collect(ctx, s.pool, func(row pgx.Row) (conversation.Replica, error) {
		var r conversation.Replica
		var keys string
		err := row.Scan(&r.ID, &r.Node, &keys, &r.ActiveKey)
		if keys != "" {
			r.Keys = strings.Split(keys, ",")
		}
		return r, err
	}, `SELECT id, node, key_ids, active_key FROM replicas WHERE expires_at >= now() ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("live replicas: %w", err)
	}
	return rs, nil
}

// RemoveReplica also forgets replicas gone for an hour, so that the table does not grow with
// the replicas that died without removing themselves.
func (s *Store) RemoveReplica(ctx context.Context, replica string) error {
	if _, err := s.exec(ctx, `DELETE FROM replicas WHERE id = $1 OR expires_at < now() - interval '1 hour'`, replica); err != nil {
		return fmt.Errorf("remove replica %s: %w", replica, err)
	}
	return nil
}
