package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

const customSecretColumns = `name, description, value_sealed, created_at, updated_at`

func scanCustomSecret(sc scanner) (customsecret.Secret, error) {
	var s customsecret.Secret
	var created, updated int64
	if err := sc.Scan(&s.Name, &s.Description, &s.ValueSealed, &created, &updated); err != nil {
		return customsecret.Secret{}, err
	}
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return s, nil
}

func (s *Store) CreateCustomSecret(ctx context.Context, userID string, sec customsecret.Secret, limit int) error {
	err := checkTimes(sec.CreatedAt, sec.UpdatedAt)
	if err == nil {
		err = s.write(ctx, func(tx *sql.Tx) error {
			n, err := countForUser(ctx, tx, "custom_secrets", "user_id", userID)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO custom_secrets (user_id, `+customSecretColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
				userID, sec.Name, sec.Description, sec.ValueSealed, nanos(sec.CreatedAt), nanos(sec.UpdatedAt))
			return store.LimitedInsert(err, isUnique(err), n, limit, customsecret.ErrExists, customsecret.ErrTooMany)
		})
	}
	if err != nil {
		return fmt.Errorf("create secret %s: %w", sec.Name, err)
	}
	return nil
}

func (s *Store) GetCustomSecret(ctx context.Context, userID, name string) (customsecret.Secret, error) {
	sec, err := scanCustomSecret(s.r.QueryRowContext(ctx,
		`SELECT `+customSecretColumns+` FROM custom_secrets WHERE user_id = ? AND name = ?`, userID, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = customsecret.ErrNotFound
	}
	if err != nil {
		return customsecret.Secret{}, fmt.Errorf("get secret %s: %w", name, err)
	}
	return sec, nil
}

func (s *Store) CustomSecrets(ctx context.Context, userID string) ([]customsecret.Secret, error) {
	ss, err := collect(ctx, s.r, scanCustomSecret,
		`SELECT `+customSecretColumns+` FROM custom_secrets WHERE user_id = ? ORDER BY name`, userID)
	if err != nil {
		return nil, fmt.Errorf("get secrets of %s: %w", userID, err)
	}
	return ss, nil
}

// ListCustomSecrets pages by name alone; the cursor's time part is unused. Names are ASCII,
// which SQLite's lower() folds.
func (s *Store) ListCustomSecrets(ctx context.Context, userID, nameContains string, q paging.Query) ([]customsecret.Secret, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list secrets: %w", err)
	}
	var w where
	w.add(`user_id = ?`, userID)
	if nameContains != "" {
		w.add(`instr(lower(name), lower(?)) > 0`, nameContains)
	}
	if c != nil {
		w.add(`name > ?`, c.id)
	}
	ss, err := collect(ctx, s.r, scanCustomSecret,
		`SELECT `+customSecretColumns+` FROM custom_secrets`+w.String()+` ORDER BY name LIMIT ?`,
		append(w.args, q.Limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list secrets: %w", err)
	}
	ss, next := page(ss, q.Limit, func(sec customsecret.Secret) (int64, string) { return 0, sec.Name })
	return ss, next, nil
}

func (s *Store) UpdateCustomSecret(ctx context.Context, userID, name string, sec customsecret.Secret) error {
	err := checkTimes(sec.CreatedAt, sec.UpdatedAt)
	if err == nil {
		var res sql.Result
		res, err = s.one.ExecContext(ctx,
			`UPDATE custom_secrets SET name = ?, description = ?, value_sealed = ?, created_at = ?, updated_at = ?
			WHERE user_id = ? AND name = ?`,
			sec.Name, sec.Description, sec.ValueSealed, nanos(sec.CreatedAt), nanos(sec.UpdatedAt), userID, name)
		if isUnique(err) {
			err = customsecret.ErrExists
		}
		if err == nil {
			err = mustAffect(res, customsecret.ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("update secret %s: %w", name, err)
	}
	return nil
}

func (s *Store) DeleteCustomSecret(ctx context.Context, userID, name string) error {
	res, err := s.one.ExecContext(ctx, `DELETE FROM custom_secrets WHERE user_id = ? AND name = ?`, userID, name)
	if err == nil {
		err = mustAffect(res, customsecret.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}
