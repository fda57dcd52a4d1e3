package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/auth"
)

func (s *Store) CreateSession(ctx context.Context, sess auth.Session) error {
	if err := checkTimes(sess.CreatedAt, sess.ExpiresAt); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	// The key must belong to the session's user: a session never acts for another.
	tag, err := s.exec(ctx,
		`INSERT INTO web_sessions (hash, key_id, user_id, created_at, expires_at)
		SELECT $1, id, user_id, $2, $3 FROM api_keys WHERE id = $4 AND user_id = $5`,
		sess.Hash, sess.CreatedAt, sess.ExpiresAt, sess.KeyID, sess.UserID)
	switch {
	case isUnique(err):
		return fmt.Errorf("create session: %w", auth.ErrConflict)
	case isForeignKey(err): // the key went between the SELECT and the insert
		err = auth.ErrNotFound
	case err == nil:
		err = mustAffect(tag, auth.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("create session: key %s: %w", sess.KeyID, err)
	}
	return nil
}

func (s *Store) LookupSession(ctx context.Context, hash []byte) (auth.Session, auth.APIKey, auth.User, error) {
	var sess auth.Session
	var u auth.User
	k, err := scanAPIKey(s.pool.QueryRow(ctx,
		`SELECT `+apiKeyColumns+`, s.hash, s.key_id, s.user_id, s.created_at, s.expires_at,
			u.id, u.name, u.is_admin, u.created_at
		FROM web_sessions s JOIN api_keys k ON k.id = s.key_id JOIN users u ON u.id = s.user_id
		WHERE s.hash = $1`, hash),
		&sess.Hash, &sess.KeyID, &sess.UserID, &sess.CreatedAt, &sess.ExpiresAt,
		&u.ID, &u.Name, &u.IsAdmin, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = auth.ErrNotFound
	}
	if err != nil {
		return auth.Session{}, auth.APIKey{}, auth.User{}, fmt.Errorf("look up session: %w", err)
	}
	return sess, k, u, nil
}

func (s *Store) ExtendSession(ctx context.Context, hash []byte, expires time.Time) error {
	err := checkTimes(expires)
	if err == nil {
		err = s.execOne(ctx, auth.ErrNotFound, `UPDATE web_sessions SET expires_at = $1 WHERE hash = $2`, expires, hash)
	}
	if err != nil {
		return fmt.Errorf("extend session: %w", err)
	}
	return nil
}

func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := s.exec(ctx, `DELETE FROM web_sessions WHERE hash = $1`, hash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

func (s *Store) DeleteExpiredSessions(ctx context.Context, t time.Time) (int, error) {
	tag, err := s.exec(ctx, `DELETE FROM web_sessions WHERE expires_at < $1`, timeArg(t))
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
