package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentd/agentd/internal/gitprovider"
)

func (s *Store) ProviderTokens(ctx context.Context, userID string) ([]gitprovider.Token, error) {
	ts, err := collect(ctx, s.r, scanToken,
		`SELECT provider, token_sealed, host, external_user_id, updated_at
		FROM provider_tokens WHERE user_id = ? ORDER BY provider`, userID)
	if err != nil {
		return nil, fmt.Errorf("get provider tokens of %s: %w", userID, err)
	}
	return ts, nil
}

func scanToken(sc scanner) (gitprovider.Token, error) {
	var t gitprovider.Token
	var updated int64
	if err := sc.Scan(&t.Provider, &t.TokenSealed, &t.Host, &t.ExternalUserID, &updated); err != nil {
		return gitprovider.Token{}, err
	}
	t.UpdatedAt = fromNanos(updated)
	return t, nil
}

// ReplaceProviderTokens deletes the user's tokens and inserts the new set in one transaction.
// Two tokens for the same provider are an error, and then the old set stays.
func (s *Store) ReplaceProviderTokens(ctx context.Context, userID string, tokens []gitprovider.Token) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM provider_tokens WHERE user_id = ?`, userID); err != nil {
			return err
		}
		for _, t := range tokens {
			if err := checkTimes(t.UpdatedAt); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx,
				`INSERT INTO provider_tokens (user_id, provider, token_sealed, host, external_user_id, updated_at)
				VALUES (?, ?, ?, ?, ?, ?)`,
				userID, t.Provider, blobArg(t.TokenSealed), t.Host, t.ExternalUserID, nanos(t.UpdatedAt))
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
