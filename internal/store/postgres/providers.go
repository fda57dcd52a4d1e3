package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/gitprovider"
)

func (s *Store) ProviderTokens(ctx context.Context, userID string) ([]gitprovider.Token, error) {
	ts, err := collect(ctx, s.pool, scanToken,
		`SELECT provider, token_sealed, host, external_user_id, updated_at
		FROM provider_tokens WHERE user_id = $1 ORDER BY provider`, userID)
	if err != nil {
		return nil, fmt.Errorf("get provider tokens of %s: %w", userID, err)
	}
	return ts, nil
}

func scanToken(row pgx.Row) (gitprovider.Token, error) {
	var t gitprovider.Token
	err := row.Scan(&t.Provider, &t.TokenSealed, &t.Host, &t.ExternalUserID, &t.UpdatedAt)
	return t, err
}

// ReplaceProviderTokens deletes the user's tokens and inserts the new set in one transaction,
// under the user's lock (see lockUser), so that concurrent replacements follow one another.
// Two tokens for the same provider are an error, and then the old set stays.
func (s *Store) ReplaceProviderTokens(ctx context.Context, userID string, tokens []gitprovider.Token) error {
	for _, t := range tokens {
		if err := checkTimes(t.UpdatedAt); err != nil {
			return fmt.Errorf("replace provider tokens of %s: %w", userID, err)
		}
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockUser(ctx, tx, lockProviderTokens, userID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM provider_tokens WHERE user_id = $1`, userID); err != nil {
			return err
		}
		for _, t := range tokens {
			_, err := tx.Exec(ctx,
				`INSERT INTO provider_tokens (user_id, provider, token_sealed, host, external_user_id, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6)`,
				userID, t.Provider, blobArg(t.TokenSealed), t.Host, t.ExternalUserID, t.UpdatedAt)
			if isUnique(err) {
				return fmt.Errorf("provider %q appears twice", t.Provider)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace provider tokens of %s: %w", userID, err)
	}
	return nil
}
