package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/webhook"
)

const webhookColumns = `id, owner_id, url, kinds, conversation_id, description, secret_sealed, created_at`

func scanWebhook(row pgx.Row) (webhook.Webhook, error) {
	var w webhook.Webhook
	var kinds string
	var conv *string
	if err := row.Scan(&w.ID, &w.OwnerID, &w.URL, &kinds, &conv, &w.Description, &w.SecretSealed, &w.CreatedAt); err != nil {
		return webhook.Webhook{}, err
	}
	if err := json.Unmarshal([]byte(kinds), &w.Kinds); err != nil {
		return webhook.Webhook{}, fmt.Errorf("webhook %s: kinds: %w", w.ID, err)
	}
	if conv != nil {
		w.ConversationID = *conv
	}
	return w, nil
}

// CreateWebhook counts and inserts under the owner's webhooks lock (see lockUser), so that
// concurrent creations cannot both pass the limit.
func (s *Store) CreateWebhook(ctx context.Context, w webhook.Webhook, max int) error {
	err := checkTimes(w.CreatedAt)
	var kinds string
	if err == nil {
		kinds, err = jsonArg(w.Kinds)
	}
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			if err := lockUser(ctx, tx, lockWebhooks, w.OwnerID); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE owner_id = $1`, w.OwnerID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return webhook.ErrLimit
			}
			_, err := tx.Exec(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				w.ID, w.OwnerID, w.URL, kinds, nullString(w.ConversationID), w.Description, w.SecretSealed, w.CreatedAt)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("create webhook %s: %w", w.ID, err)
	}
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, ownerID, id string) (webhook.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx,
		`SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND owner_id = $2`, id, ownerID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

func (s *Store) ListWebhooks(ctx context.Context, ownerID string) ([]webhook.Webhook, error) {
	ws, err := collect(ctx, s.pool, scanWebhook,
		`SELECT `+webhookColumns+` FROM webhooks WHERE owner_id = $1 ORDER BY created_at, id`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", ownerID, err)
	}
	return ws, nil
}

// DeleteWebhook deletes the webhook's deliveries with it (ON DELETE CASCADE).
func (s *Store) DeleteWebhook(ctx context.Context, ownerID, id string) error {
	if err := s.execOne(ctx, webhook.ErrNotFound, `DELETE FROM webhooks WHERE id = $1 AND owner_id = $2`, id, ownerID); err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	return nil
}

const deliveryColumns = `id, webhook_id, owner_id, kind, payload, status, attempts, response_code, error,
	created_at, updated_at, next_attempt_at, retry_until`

func scanDelivery(row pgx.Row) (webhook.Delivery, error) {
	var d webhook.Delivery
	var payload, status string
	var code *int32
	var next *time.Time
	if err := row.Scan(&d.ID, &d.WebhookID, &d.OwnerID, &d.Kind, &payload, &status, &d.Attempts, &code, &d.Error,
		&d.CreatedAt, &d.UpdatedAt, &next, &d.RetryUntil); err != nil {
		return webhook.Delivery{}, err
	}
	d.Payload, d.Status = []byte(payload), webhook.Status(status)
	if code != nil {
		d.ResponseCode = int(*code)
	}
	if next != nil {
		d.NextAttemptAt = *next
	}
	return d, nil
}

// deliveryArgs are the mutable columns of d, in the order of UPDATE's SET.
func deliveryArgs(d webhook.Delivery) []any {
	var code *int
	if d.ResponseCode != 0 {
		code = &d.ResponseCode
	}
	return []any{string(d.Status), d.Attempts, code, d.Error, d.UpdatedAt, nullTime(d.NextAttemptAt), d.RetryUntil}
}

func (s *Store) CreateDeliveries(ctx context.Context, ds []webhook.Delivery) error {
	for _, d := range ds {
		if err := checkTimes(d.CreatedAt, d.UpdatedAt, d.NextAttemptAt, d.RetryUntil); err != nil {
			return fmt.Errorf("create deliveries: %w", err)
		}
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, d := range ds {
			b.Queue(`INSERT INTO webhook_deliveries (id, webhook_id, owner_id, kind, payload, created_at,
				status, attempts, response_code, error, updated_at, next_attempt_at, retry_until)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				append([]any{d.ID, d.WebhookID, d.OwnerID, d.Kind, string(d.Payload), d.CreatedAt}, deliveryArgs(d)...)...)
		}
		br := tx.SendBatch(ctx, &b)
		defer br.Close()
		for _, d := range ds {
			if _, err := br.Exec(); err != nil {
				if isForeignKey(err) {
					return fmt.Errorf("delivery %s: %w", d.ID, webhook.ErrNotFound)
				}
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return fmt.Errorf("create deliveries: %w", err)
	}
	return nil
}

func (s *Store) GetDelivery(ctx context.Context, ownerID, webhookID, id string) (webhook.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2 AND owner_id = $3`, id, webhookID, ownerID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("get delivery %s: %w", id, err)
	}
	return d, nil
}

func (s *Store) ListDeliveries(ctx context.Context, ownerID, webhookID string, status webhook.Status, q paging.Query) ([]webhook.Delivery, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	var w where
	w.add("webhook_id = " + w.arg(webhookID))
	w.add("owner_id = " + w.arg(ownerID))
	if status != "" {
		w.add("status = " + w.arg(string(status)))
	}
	keyset(&w, "created_at", "id", true, c)
	ds, err := collect(ctx, s.pool, scanDelivery,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries`+w.String()+order("created_at", "id", true)+` LIMIT `+w.arg(q.Limit+1),
		w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	ds, next := page(ds, q.Limit, func(d webhook.Delivery) (int64, string) { return timeKey(d.CreatedAt), d.ID })
	return ds, next, nil
}

// ClaimDeliveries claims in one statement. FOR UPDATE SKIP LOCKED makes dispatchers of
// several replicas claim disjoint deliveries without waiting for each other: a delivery that
// another claim is taking is left to it.
func (s *Store) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]webhook.Delivery, error) {
	if err := checkTimes(now, leaseUntil); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	defer c.Release()
	// Run to its end whatever ctx does, as exec does: a claim reported as failed took nothing.
	ds, err := collect(context.WithoutCancel(ctx), c, scanDelivery, `WITH due AS (
			SELECT id, next_attempt_at AS due FROM webhook_deliveries
			WHERE status = 'pending' AND next_attempt_at <= $1
			ORDER BY next_attempt_at, id LIMIT $2
			FOR UPDATE SKIP LOCKED),
		claimed AS (
			UPDATE webhook_deliveries d SET next_attempt_at = $3 FROM due WHERE d.id = due.id
			RETURNING due.due, `+deliveryColumnsOf("d")+`)
		SELECT `+deliveryColumns+` FROM claimed ORDER BY due, id`, now, limit, leaseUntil)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return ds, nil
}

// deliveryColumnsOf is deliveryColumns of the table called alias.
func deliveryColumnsOf(alias string) string {
	return alias + `.id, ` + alias + `.webhook_id, ` + alias + `.owner_id, ` + alias + `.kind, ` + alias + `.payload, ` +
		alias + `.status, ` + alias + `.attempts, ` + alias + `.response_code, ` + alias + `.error, ` + alias + `.created_at, ` +
		alias + `.updated_at, ` + alias + `.next_attempt_at, ` + alias + `.retry_until`
}

func (s *Store) NextDeliveryAt(ctx context.Context) (time.Time, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx,
		`SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next delivery: %w", err)
	}
	if next == nil {
		return time.Time{}, nil
	}
	return *next, nil
}

func (s *Store) UpdateDelivery(ctx context.Context, d webhook.Delivery) error {
	err := checkTimes(d.UpdatedAt, d.NextAttemptAt, d.RetryUntil)
	if err == nil {
		err = s.execOne(ctx, webhook.ErrNotFound, `UPDATE webhook_deliveries SET status = $1, attempts = $2, response_code = $3,
			error = $4, updated_at = $5, next_attempt_at = $6, retry_until = $7 WHERE id = $8 AND owner_id = $9`,
			append(deliveryArgs(d), d.ID, d.OwnerID)...)
	}
	if err != nil {
		return fmt.Errorf("update delivery %s: %w", d.ID, err)
	}
	return nil
}

func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1`, timeArg(before))
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
