package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
)

// Bootstrap creates admin and key in one IMMEDIATE transaction that first checks the users
// table is empty; concurrent callers, in this process or another, queue on the write lock.
func (s *Store) Bootstrap(ctx context.Context, admin auth.User, key auth.APIKey) (bool, error) {
	created := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&exists); err != nil {
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
	if err := insertUser(ctx, s.one, u); err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	return nil
}

func insertUser(ctx context.Context, db execer, u auth.User) error {
	if err := checkTimes(u.CreatedAt); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx,
		`INSERT INTO users (id, name, is_admin, created_at) VALUES (?, ?, ?, ?)`,
		u.ID, u.Name, u.IsAdmin, nanos(u.CreatedAt))
	if isUnique(err) {
		return fmt.Errorf("user id or name %q: %w", u.Name, auth.ErrConflict)
	}
	return err
}

const userColumns = `id, name, is_admin, created_at`

func scanUser(sc scanner) (auth.User, error) {
	var u auth.User
	var created int64
	if err := sc.Scan(&u.ID, &u.Name, &u.IsAdmin, &created); err != nil {
		return auth.User{}, err
	}
	u.CreatedAt = fromNanos(created)
	return u, nil
}

func (s *Store) GetUser(ctx context.Context, id string) (auth.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	us, err := collect(ctx, s.r, scanUser,
		`SELECT `+userColumns+` FROM users`+w.String()+order("created_at", "id", false)+` LIMIT ?`,
		append(w.args, q.Limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	us, next := page(us, q.Limit, func(u auth.User) (int64, string) { return nanos(u.CreatedAt), u.ID })
	return us, next, nil
}

// CreateAPIKey counts (when limit > 0) and inserts in one write transaction (see countForUser).
func (s *Store) CreateAPIKey(ctx context.Context, k auth.APIKey, limit int) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if limit > 0 {
			n, err := countForUser(ctx, tx, "api_keys", "user_id", k.UserID)
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

func insertAPIKey(ctx context.Context, db execer, k auth.APIKey) error {
	if err := checkTimes(k.CreatedAt); err != nil {
		return err
	}
	if k.ExpiresAt != nil {
		if err := checkTimes(*k.ExpiresAt); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(ctx,
		`INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.UserID, k.Name, k.Prefix, k.Hash, nanos(k.CreatedAt), nullNanos(k.ExpiresAt))
	switch {
	case isForeignKey(err):
		return fmt.Errorf("user %s: %w", k.UserID, auth.ErrNotFound)
	case isUnique(err):
		return fmt.Errorf("api key id or hash: %w", auth.ErrConflict)
	}
	return err
}

const apiKeyColumns = `k.id, k.user_id, k.name, k.prefix, k.hash, k.created_at, k.expires_at`

func scanAPIKey(sc scanner, extra ...any) (auth.APIKey, error) {
	var k auth.APIKey
	var created int64
	var expires sql.NullInt64
	dest := append([]any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &created, &expires}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return auth.APIKey{}, err
	}
	k.CreatedAt = fromNanos(created)
	k.ExpiresAt = fromNullNanos(expires)
	return k, nil
}

// LookupAPIKey reads through a cache of the keys found lately (apikeycache.go). The key and
// user it returns may be shared with other callers: their pointers and slices are not to be
// changed.
func (s *Store) LookupAPIKey(ctx context.Context, hash []byte) (auth.APIKey, auth.User, error) {
	return s.lookupKey(ctx, hash, func() (auth.APIKey, auth.User, error) {
		var u auth.User
		var userCreated int64
		k, err := scanAPIKey(s.r.QueryRowContext(ctx,
			`SELECT `+apiKeyColumns+`, u.id, u.name, u.is_admin, u.created_at
			FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = ?`, hash),
			&u.ID, &u.Name, &u.IsAdmin, &userCreated)
		if errors.Is(err, sql.ErrNoRows) {
			err = auth.ErrNotFound
		}
		if err != nil {
			return auth.APIKey{}, auth.User{}, fmt.Errorf("look up api key: %w", err)
		}
		u.CreatedAt = fromNanos(userCreated)
		return k, u, nil
	})
}

func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]auth.APIKey, error) {
	ks, err := collect(ctx, s.r, func(sc scanner) (auth.APIKey, error) { return scanAPIKey(sc) },
		`SELECT `+apiKeyColumns+` FROM api_keys k WHERE k.user_id = ? ORDER BY k.created_at, k.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list api keys of %s: %w", userID, err)
	}
	return ks, nil
}

func (s *Store) DeleteAPIKey(ctx context.Context, userID, keyID string) error {
	res, err := s.one.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ? AND user_id = ?`, keyID, userID)
	if err == nil {
		err = mustAffect(res, auth.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", keyID, err)
	}
	return nil
}
