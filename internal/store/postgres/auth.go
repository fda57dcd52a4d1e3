package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
)

// Bootstrap creates admin and key in one transaction that first locks the users table
// against writes (SHARE ROW EXCLUSIVE conflicts with itself and with every insert), then
// checks that it is empty: concurrent bootstraps, of this replica or another, queue on the
// lock, and the first to get it is the only one to find no user. Reads of users go on
// meanwhile; a CreateUser waits the moment the bootstrap takes.
func (s *Store) Bootstrap(ctx context.Context, admin auth.User, key auth.APIKey) (bool, error) {
	created := false
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if err := insertUser(ctx, tx, admin); err != nil {
			return err
		}
		if err := insertAPIKey(ctx, tx, key); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("bootstrap admin %s: %w", admin.ID, err)
	}
	return created, nil
}

func (s *Store) CreateUser(ctx context.Context, u auth.User) error {
	err := checkTimes(u.CreatedAt)
	if err == nil {
		_, err = s.exec(ctx, insertUserSQL, u.ID, u.Name, u.IsAdmin, u.CreatedAt)
		err = userErr(u, err)
	}
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	return nil
}

const insertUserSQL = `INSERT INTO users (id, name, is_admin, created_at) VALUES ($1, $2, $3, $4)`

func insertUser(ctx context.Context, tx pgx.Tx, u auth.User) error {
	if err := checkTimes(u.CreatedAt); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, insertUserSQL, u.ID, u.Name, u.IsAdmin, u.CreatedAt)
	return userErr(u, err)
}

func userErr(u auth.User, err error) error {
	if isUnique(err) {
		return fmt.Errorf("user id or name %q: %w", u.Name, auth.ErrConflict)
	}
	return err
}

const userColumns = `id, name, is_admin, created_at`

func scanUser(row pgx.Row) (auth.User, error) {
	var u auth.User
	err := row.Scan(&u.ID, &u.Name, &u.IsAdmin, &u.CreatedAt)
	return u, err
}

func (s *Store) GetUser(ctx context.Context, id string) (auth.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = auth.ErrNotFound
	}
	if err != nil {
		return auth.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return u, nil
}

func (s *Store) ListUsers(ctx context.Context, q paging.Query) ([]auth.User, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	var w where
	keyset(&w, "created_at", "id", false, c)
	us, err := collect(ctx, s.pool, scanUser,
		`SELECT `+userColumns+` FROM users`+w.String()+order("created_at", "id", false)+limit(q.Limit+1),
		w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	us, next := page(us, q.Limit, func(u auth.User) (int64, string) { return timeKey(u.CreatedAt), u.ID })
	return us, next, nil
}

// CreateAPIKey counts (when limit > 0) and inserts under the user's keys lock (see
// countForUser), so that concurrent creations cannot both pass the limit.
func (s *Store) CreateAPIKey(ctx context.Context, k auth.APIKey, limit int) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if limit > 0 {
			n, err := countForUser(ctx, tx, lockAPIKeys, "user_id", k.UserID)
			if err != nil {
				return err
			}
			if n >= limit {
				return auth.ErrTooManyKeys
			}
		}
		return insertAPIKey(ctx, tx, k)
	})
	if err != nil {
		return fmt.Errorf("create api key %s: %w", k.ID, err)
	}
	return nil
}

func checkAPIKey(k auth.APIKey) error {
	if k.ExpiresAt != nil {
		return checkTimes(k.CreatedAt, *k.ExpiresAt)
	}
	return checkTimes(k.CreatedAt)
}

func insertAPIKey(ctx context.Context, tx pgx.Tx, k auth.APIKey) error {
	if err := checkAPIKey(k); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.UserID, k.Name, k.Prefix, k.Hash, k.CreatedAt, k.ExpiresAt)
	return apiKeyErr(k, err)
}

func apiKeyErr(k auth.APIKey, err error) error {
	switch {
	case isForeignKey(err):
		return fmt.Errorf("user %s: %w", k.UserID, auth.ErrNotFound)
	case isUnique(err):
		return fmt.Errorf("api key id or hash: %w", auth.ErrConflict)
	}
	return err
}

const apiKeyColumns = `k.id, k.user_id, k.name, k.prefix, k.hash, k.created_at, k.expires_at`

// scanAPIKey scans apiKeyColumns, then the columns after them into extra.
func scanAPIKey(row pgx.Row, extra ...any) (auth.APIKey, error) {
	var k auth.APIKey
	var expires *time.Time
	if err := row.Scan(append([]any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &k.CreatedAt, &expires}, extra...)...); err != nil {
		return auth.APIKey{}, err
	}
	k.ExpiresAt = expires
	return k, nil
}

// LookupAPIKey reads the key, unless the key cache holds it (keycache.go).
func (s *Store) LookupAPIKey(ctx context.Context, hash []byte) (auth.APIKey, auth.User, error) {
	k, u, ok, gen := s.keys.get(hash, time.Now())
	if ok {
		return k, u, nil
	}
	k, err := scanAPIKey(s.pool.QueryRow(ctx,
		`SELECT `+apiKeyColumns+`, u.id, u.name, u.is_admin, u.created_at
		FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = $1`, hash),
		&u.ID, &u.Name, &u.IsAdmin, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = auth.ErrNotFound
	}
	if err != nil {
		return auth.APIKey{}, auth.User{}, fmt.Errorf("look up api key: %w", err)
	}
	s.keys.put(hash, k, u, gen, time.Now())
	return k, u, nil
}

func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]auth.APIKey, error) {
	ks, err := collect(ctx, s.pool, func(row pgx.Row) (auth.APIKey, error) { return scanAPIKey(row) },
		`SELECT `+apiKeyColumns+` FROM api_keys k WHERE k.user_id = $1 ORDER BY k.created_at, k.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list api keys of %s: %w", userID, err)
	}
	return ks, nil
}

// DeleteAPIKey deletes the sessions opened with the key too (ON DELETE CASCADE), and tells
// every replica's key cache, in the same transaction (keycache.go).
func (s *Store) DeleteAPIKey(ctx context.Context, userID, keyID string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE id = $1 AND user_id = $2`, keyID, userID)
		if err != nil {
			return err
		}
		if err := mustAffect(tag, auth.ErrNotFound); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, EventsChannel, keysChanged)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", keyID, err)
	}
	s.keys.empty()
	return nil
}

// keysChanged is the notification of a deleted API key.
const keysChanged = "k"
