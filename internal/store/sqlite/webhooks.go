package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/webhook"
)

const webhookColumns = `id, owner_id, url, kinds, conversation_id, description, secret_sealed, created_at`

func scanWebhook(sc scanner) (webhook.Webhook, error) {
	var w webhook.Webhook
	var kinds string
	var conv sql.NullString
	var created int64
	if err := sc.Scan(&w.ID, &w.OwnerID, &w.URL, &kinds, &conv, &w.Description, &w.SecretSealed, &created); err != nil {
		return webhook.Webhook{}, err
	}
	if err := json.Unmarshal([]byte(kinds), &w.Kinds); err != nil {
		return webhook.Webhook{}, fmt.Errorf("webhook %s: kinds: %w", w.ID, err)
	}
	w.ConversationID, w.CreatedAt = conv.String, fromNanos(created)
	return w, nil
}

func (s *Store) CreateWebhook(ctx context.Context, w webhook.Webhook, max int) error {
	if err := checkTimes(w.CreatedAt); err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	kinds, err := jsonArg(w.Kinds)
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	var conv any
	if w.ConversationID != "" {
		conv = w.ConversationID
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner_id = ?`, w.OwnerID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return webhook.ErrLimit
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.OwnerID, w.URL, kinds, conv, w.Description, w.SecretSealed, nanos(w.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("create webhook %s: %w", w.ID, err)
	}
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, ownerID, id string) (webhook.Webhook, error) {
	w, err := scanWebhook(s.r.QueryRowContext(ctx,
		`SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND owner_id = ?`, id, ownerID))
	if errors.Is(err, sql.ErrNoRows) {
		err = webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

func (s *Store) ListWebhooks(ctx context.Context, ownerID string) ([]webhook.Webhook, error) {
	ws, err := collect(ctx, s.r, scanWebhook,
		`SELECT `+webhookColumns+` FROM webhooks WHERE owner_id = ? ORDER BY created_at, id`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", ownerID, err)
	}
	return ws, nil
}

func (s *Store) DeleteWebhook(ctx context.Context, ownerID, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND owner_id = ?`, id, ownerID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND owner_id = ?`, id, ownerID)
		if err != nil {
			return err
		}
		return mustAffect(res, webhook.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	return nil
}

const deliveryColumns = `id, webhook_id, owner_id, kind, payload, status, attempts, response_code, error,
	created_at, updated_at, next_attempt_at, retry_until`

func scanDelivery(sc scanner) (webhook.Delivery, error) {
	var d webhook.Delivery
	var payload, status string
	var code, next sql.NullInt64
	var created, updated, until int64
	if err := sc.Scan(&d.ID, &d.WebhookID, &d.OwnerID, &d.Kind, &payload, &status, &d.Attempts, &code, &d.Error,
		&created, &updated, &next, &until); err != nil {
		return webhook.Delivery{}, err
	}
	d.Payload, d.Status, d.ResponseCode = []byte(payload), webhook.Status(status), int(code.Int64)
	d.CreatedAt, d.UpdatedAt, d.RetryUntil = fromNanos(created), fromNanos(updated), fromNanos(until)
	if next.Valid {
		d.NextAttemptAt = fromNanos(next.Int64)
	}
	return d, nil
}

// deliveryArgs are the mutable columns of d, in the order of UPDATE's SET.
func deliveryArgs(d webhook.Delivery) []any {
	var code, next any
	if d.ResponseCode != 0 {
		code = d.ResponseCode
	}
	if !d.NextAttemptAt.IsZero() {
		next = nanos(d.NextAttemptAt)
	}
	return []any{string(d.Status), d.Attempts, code, d.Error, nanos(d.UpdatedAt), next, nanos(d.RetryUntil)}
}

func (s *Store) CreateDeliveries(ctx context.Context, ds []webhook.Delivery) error {
	for _, d := range ds {
		if err := checkTimes(d.CreatedAt, d.UpdatedAt, d.NextAttemptAt, d.RetryUntil); err != nil {
			return fmt.Errorf("create deliveries: %w", err)
		}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, d := range ds {
			args := append([]any{d.ID, d.WebhookID, d.OwnerID, d.Kind, string(d.Payload), nanos(d.CreatedAt)}, deliveryArgs(d)...)
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, kind, payload, created_at,
				status, attempts, response_code, error, updated_at, next_attempt_at, retry_until)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
				if isForeignKey(err) {
					return fmt.Errorf("delivery %s: %w", d.ID, webhook.ErrNotFound)
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create deliveries: %w", err)
	}
	return nil
}

func (s *Store) GetDelivery(ctx context.Context, ownerID, webhookID, id string) (webhook.Delivery, error) {
	d, err := scanDelivery(s.r.QueryRowContext(ctx,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ? AND webhook_id = ? AND owner_id = ?`, id, webhookID, ownerID))
	if errors.Is(err, sql.ErrNoRows) {
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
	w.add("webhook_id = ?", webhookID)
	w.add("owner_id = ?", ownerID)
	if status != "" {
		w.add("status = ?", string(status))
	}
	keyset(&w, "created_at", "id", true, c)
	ds, err := collect(ctx, s.r, scanDelivery,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries`+w.String()+order("created_at", "id", true)+` LIMIT ?`,
		append(w.args, q.Limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	ds, next := page(ds, q.Limit, func(d webhook.Delivery) (int64, string) { return nanos(d.CreatedAt), d.ID })
	return ds, next, nil
}

func (s *Store) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]webhook.Delivery, error) {
	if err := checkTimes(now, leaseUntil); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	var ds []webhook.Delivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		ds, err = collect(ctx, tx, scanDelivery, `SELECT `+deliveryColumns+` FROM webhook_deliveries
			WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`, nanos(now), limit)
		if err != nil {
			return err
		}
		for i := range ds {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ?`,
				nanos(leaseUntil), ds[i].ID); err != nil {
				return err
			}
			ds[i].NextAttemptAt = leaseUntil
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return ds, nil
}

func (s *Store) NextDeliveryAt(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	if err := s.r.QueryRowContext(ctx,
		`SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next delivery: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return fromNanos(next.Int64), nil
}

func (s *Store) UpdateDelivery(ctx context.Context, d webhook.Delivery) error {
	err := checkTimes(d.UpdatedAt, d.NextAttemptAt, d.RetryUntil)
	if err == nil {
		var res sql.Result
		res, err = s.one.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, response_code = ?,
			error = ?, updated_at = ?, next_attempt_at = ?, retry_until = ? WHERE id = ? AND owner_id = ?`,
			append(deliveryArgs(d), d.ID, d.OwnerID)...)
		if err == nil {
			err = mustAffect(res, webhook.ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("update delivery %s: %w", d.ID, err)
	}
	return nil
}

func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int, error) {
	res, err := s.one.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?`, nanos(before))
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
