package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

func (s *Store) CreateSession(ctx context.Context, sess auth.Session) error {
	if err := checkTimes(sess.CreatedAt, sess.ExpiresAt); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	// The key must belong to the session's user: a session never acts for another.
	res, err := s.one.ExecContext(ctx,
		`INSERT INTO web_sessions (hash, key_id, user_id, created_at, expires_at)
		SELECT ?, id, user_id, ?, ? FROM api_keys WHERE id = ? AND user_id = ?`,
		sess.Hash, nanos(sess.CreatedAt), nanos(sess.ExpiresAt), sess.KeyID, sess.UserID)
	switch {
	case isUnique(err):
		return fmt.Errorf("create session: %w", auth.ErrConflict)
	case err == nil:
		err = mustAffect(res, auth.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("create session: key %s: %w", sess.KeyID, err)
	}
	return nil
}

func (s *Store) LookupSession(ctx context.Context, hash []byte) (auth.Session, auth.APIKey, auth.User, error) {
	var sess auth.Session
	var u auth.User
	var created, expires, userCreated int64
	k, err := scanAPIKey(s.r.QueryRowContext(ctx,
		`SELECT `+apiKeyColumns+`, s.hash, s.key_id, s.user_id, s.created_at, s.expires_at,
			u.id, u.name, u.is_admin, u.created_at
		FROM web_sessions s JOIN api_keys k ON k.id = s.key_id JOIN users u ON u.id = s.user_id
		WHERE s.hash = ?`, hash),
		&sess.Hash, &sess.KeyID, &sess.UserID, &created, &expires,
		&u.ID, &u.Name, &u.IsAdmin, &userCreated)
	if errors.Is(err, sql.ErrNoRows) {
		err = auth.ErrNotFound
	}
	if err != nil {
		return auth.Session{}, auth.APIKey{}, auth.User{}, fmt.Errorf("look up session: %w", err)
	}
	sess.CreatedAt, sess.ExpiresAt, u.CreatedAt = fromNanos(created), fromNanos(expires), fromNanos(userCreated)
	return sess, k, u, nil
}

func (s *Store) ExtendSession(ctx context.Context, hash []byte, expires time.Time) error {
	if err := checkTimes(expires); err != nil {
		return fmt.Errorf("extend session: %w", err)
	}
	res, err := s.one.ExecContext(ctx, `UPDATE web_sessions SET expires_at = ? WHERE hash = ?`, nanos(expires), hash)
	if err == nil {
		err = mustAffect(res, auth.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("extend session: %w", err)
	}
	return nil
}

func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := s.one.ExecContext(ctx, `DELETE FROM web_sessions WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

func (s *Store) DeleteExpiredSessions(ctx context.Context, t time.Time) (int, error) {
	res, err := s.one.ExecContext(ctx, `DELETE FROM web_sessions WHERE expires_at < ?`, nanos(t))
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return int(n), nil
}
