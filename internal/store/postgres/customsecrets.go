package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

const customSecretColumns = `name, description, value_sealed, created_at, updated_at`

func scanCustomSecret(row pgx.Row) (customsecret.Secret, error) {
	var s customsecret.Secret
	err := row.Scan(&s.Name, &s.Description, &s.ValueSealed, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// CreateCustomSecret counts and inserts under the user's secrets lock (see countForUser), so that
// concurrent creations cannot both pass the limit.
func (s *Store) CreateCustomSecret(ctx context.Context, userID string, sec customsecret.Secret, limit int) error {
	err := checkTimes(sec.CreatedAt, sec.UpdatedAt)
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			n, err := countForUser(ctx, tx, lockCustomSecrets, "user_id", userID)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx,
				`INSERT INTO custom_secrets (user_id, `+customSecretColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
				userID, sec.Name, sec.Description, sec.ValueSealed, sec.CreatedAt, sec.UpdatedAt)
			return store.LimitedInsert(err, isUnique(err), n, limit, customsecret.ErrExists, customsecret.ErrTooMany)
		})
	}
	if err != nil {
		return fmt.Errorf("create secret %s: %w", sec.Name, err)
	}
	return nil
}

func (s *Store) GetCustomSecret(ctx context.Context, userID, name string) (customsecret.Secret, error) {
	sec, err := scanCustomSecret(s.pool.QueryRow(ctx,
		`SELECT `+customSecretColumns+` FROM custom_secrets WHERE user_id = $1 AND name = $2`, userID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		err = customsecret.ErrNotFound
	}
	if err != nil {
		return customsecret.Secret{}, fmt.Errorf("get secret %s: %w", name, err)
	}
	return sec, nil
}

func (s *Store) CustomSecrets(ctx context.Context, userID string) ([]customsecret.Secret, error) {
	ss, err := collect(ctx, s.pool, scanCustomSecret,
		`SELECT `+customSecretColumns+` FROM custom_secrets WHERE user_id = $1 ORDER BY name`, userID)
	if err != nil {
		return nil, fmt.Errorf("get secrets of %s: %w", userID, err)
	}
	return ss, nil
}

// ListCustomSecrets pages by name alone; the cursor's time part is unused. The name filter
// folds ASCII letters only, as SQLite's lower() does: lower() in the C collation.
func (s *Store) ListCustomSecrets(ctx context.Context, userID, nameContains string, q paging.Query) ([]customsecret.Secret, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list secrets: %w", err)
	}
	var w where
	w.add(`user_id = ` + w.arg(userID))
	if nameContains != "" {
		w.add(`strpos(lower(name), lower(` + w.arg(nameContains) + `::text COLLATE "C")) > 0`)
	}
	if c != nil {
		w.add(`name > ` + w.arg(c.id))
	}
	ss, err := collect(ctx, s.pool, scanCustomSecret,
		`SELECT `+customSecretColumns+` FROM custom_secrets`+w.String()+` ORDER BY name`+limit(q.Limit+1),
		w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list secrets: %w", err)
	}
	ss, next := page(ss, q.Limit, func(sec customsecret.Secret) (int64, string) { return 0, sec.Name })
	return ss, next, nil
}

func (s *Store) UpdateCustomSecret(ctx context.Context, userID, name string, sec customsecret.Secret) error {
	err := checkTimes(sec.CreatedAt, sec.UpdatedAt)
	if err == nil {
		err = s.execOne(ctx, customsecret.ErrNotFound,
			`UPDATE custom_secrets SET name = $1, description = $2, value_sealed = $3, created_at = $4, updated_at = $5
			WHERE user_id = $6 AND name = $7`,
			sec.Name, sec.Description, sec.ValueSealed, sec.CreatedAt, sec.UpdatedAt, userID, name)
		if isUnique(err) {
			err = customsecret.ErrExists
		}
	}
	if err != nil {
		return fmt.Errorf("update secret %s: %w", name, err)
	}
	return nil
}

func (s *Store) DeleteCustomSecret(ctx context.Context, userID, name string) error {
	err := s.execOne(ctx, customsecret.ErrNotFound, `DELETE FROM custom_secrets WHERE user_id = $1 AND name = $2`, userID, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}
