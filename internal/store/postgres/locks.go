package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Kinds of a user's rows that lockUser guards. A kind that countForUser counts is the name of
// its table.
const (
	lockSkills         = "user_skills"
	lockWebhooks       = "webhooks"
	lockProviderTokens = "provider_tokens"
	lockSandboxes      = "sandboxes"
	lockCustomSecrets  = "custom_secrets"
	lockAPIKeys        = "api_keys"
	// lockWebhookClaims is taken (tried) by claims of webhook deliveries, per owner.
	lockWebhookClaims = "webhook_claims"
)

// lockUser takes a transaction-scoped advisory lock on one kind of a user's rows, held until
// the transaction ends. The transactions that count a user's rows against a limit, or replace
// the whole set, take it first, so that they follow one another: at READ COMMITTED, two of
// them could otherwise both count below the limit and both insert, or both delete the old set
// and then clash on the new one. A row lock cannot guard against rows that do not exist yet.
// The lock's key is a 64-bit hash of kind and user: two users whose keys collide merely wait
// for each other.
func lockUser(ctx context.Context, tx pgx.Tx, kind, userID string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, kind+":"+userID)
	return err
}

// countForUser takes the user's lock on the rows of table (see lockUser) and counts them, owner
// naming the column that holds the user (both are this package's constants, never input). A
// creation bounded per user counts so, then inserts in the same transaction: the count holds
// until it commits.
func countForUser(ctx context.Context, tx pgx.Tx, table, owner, userID string) (int, error) {
	if err := lockUser(ctx, tx, table, userID); err != nil {
		return 0, err
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE `+owner+` = $1`, userID).Scan(&n)
	return n, err
}
