package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
		n, err := countForUser(ctx, tx, "webhooks", "owner_id", w.OwnerID)
		if err != nil {
			return err
		}
		if n >= max {
			return webhook.ErrLimit
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
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
	created_at, updated_at, next_attempt_at, retry_until, endpoint`

func scanDelivery(sc scanner) (webhook.Delivery, error) {
	var d webhook.Delivery
	var payload, status string
	var code, next sql.NullInt64
	var created, updated, until int64
	if err := sc.Scan(&d.ID, &d.WebhookID, &d.OwnerID, &d.Kind, &payload, &status, &d.Attempts, &code, &d.Error,
		&created, &updated, &next, &until, &d.Endpoint); err != nil {
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
			args := append([]any{d.ID, d.WebhookID, d.OwnerID, d.Kind, string(d.Payload), d.Endpoint, nanos(d.CreatedAt)}, deliveryArgs(d)...)
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, kind, payload, endpoint, created_at,
				status, attempts, response_code, error, updated_at, next_attempt_at, retry_until)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
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

// claimQuery picks the deliveries a claim takes (see webhook.Store.ClaimDeliveries), its
// arguments now (?1), the caps per endpoint (?2) and per user (?3), and the limit (?4). A
// delivery's place among its endpoint's due ones, after those under way, must be within the
// endpoint's cap; of those left, its turn among its owner's, after those under way, within the
// user's cap; turns interleave the users.
const claimQuery = `WITH flying AS (
		SELECT owner_id, endpoint FROM webhook_deliveries WHERE claimed_until > ?1 AND status = 'pending'),
	due AS (
		SELECT d.id, d.owner_id, d.next_attempt_at,
			ROW_NUMBER() OVER (PARTITION BY d.owner_id, d.endpoint ORDER BY d.next_attempt_at, d.id)
				+ (SELECT COUNT(*) FROM flying f WHERE f.owner_id = d.owner_id AND f.endpoint = d.endpoint) AS place
		FROM webhook_deliveries d
		LEFT JOIN webhook_endpoints e ON e.owner_id = d.owner_id AND e.endpoint = d.endpoint
		WHERE d.status = 'pending' AND d.next_attempt_at <= ?1 AND (e.not_before IS NULL OR e.not_before <= ?1)),
	open AS (
		SELECT id, owner_id, next_attempt_at,
			ROW_NUMBER() OVER (PARTITION BY owner_id ORDER BY next_attempt_at, id) AS turn
		FROM due WHERE place <= ?2)
	SELECT id FROM open
	WHERE turn + (SELECT COUNT(*) FROM flying f WHERE f.owner_id = open.owner_id) <= ?3
	ORDER BY turn, next_attempt_at, id LIMIT ?4`

// capOf is a cap for SQL: zero bounds nothing.
func capOf(n int) int {
	if n <= 0 {
		return math.MaxInt32
	}
	return n
}

// ClaimDeliveries claims in one write transaction: SQLite's single writer orders the claims
// of every process on the file, so each counts what the others claimed.
func (s *Store) ClaimDeliveries(ctx context.Context, c webhook.Claim) ([]webhook.Delivery, error) {
	if err := checkTimes(c.Now, c.LeaseUntil); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	var ds []webhook.Delivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		ids, err := collect(ctx, tx, func(sc scanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		}, claimQuery, nanos(c.Now), capOf(c.PerEndpoint), capOf(c.PerUser), c.Limit)
		if err != nil {
			return err
		}
		ds = make([]webhook.Delivery, 0, len(ids))
		for _, id := range ids {
			d, err := scanDeliveryWith(tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = ?, claimed_until = ?
				WHERE id = ? RETURNING `+deliveryColumns+`,
				(SELECT timeouts FROM webhook_endpoints e WHERE e.owner_id = webhook_deliveries.owner_id AND e.endpoint = webhook_deliveries.endpoint)`,
				nanos(c.LeaseUntil), nanos(c.LeaseUntil), id))
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return ds, nil
}

// scanDeliveryWith scans deliveryColumns and then the endpoint's timeouts (NULL: none).
func scanDeliveryWith(sc scanner) (webhook.Delivery, error) {
	var timeouts sql.NullInt64
	d, err := scanDelivery(extraScanner{sc, []any{&timeouts}})
	d.EndpointTimeouts = int(timeouts.Int64)
	return d, err
}

// extraScanner scans into the destinations given and then into extra.
type extraScanner struct {
	sc    scanner
	extra []any
}

func (e extraScanner) Scan(dest ...any) error { return e.sc.Scan(append(dest, e.extra...)...) }

func (s *Store) NextDeliveryAt(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT MIN(MAX(d.next_attempt_at, COALESCE(e.not_before, 0)))
		FROM webhook_deliveries d
		LEFT JOIN webhook_endpoints e ON e.owner_id = d.owner_id AND e.endpoint = d.endpoint
		WHERE d.status = 'pending'`).Scan(&next); err != nil {
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
			error = ?, updated_at = ?, next_attempt_at = ?, retry_until = ?, claimed_until = NULL WHERE id = ? AND owner_id = ?`,
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
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?`, nanos(before))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE not_before < ?`, nanos(before))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return int(n), nil
}

func (s *Store) EndpointTimedOut(ctx context.Context, ownerID, endpoint string, now time.Time, pause func(n int) time.Duration) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `INSERT INTO webhook_endpoints (owner_id, endpoint, timeouts, not_before) VALUES (?, ?, 1, ?)
			ON CONFLICT (owner_id, endpoint) DO UPDATE SET timeouts = timeouts + 1 RETURNING timeouts`,
			ownerID, endpoint, nanos(now)).Scan(&n); err != nil {
			return err
		}
		until := now.Add(pause(n))
		if err := checkTimes(until); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET not_before = ? WHERE owner_id = ? AND endpoint = ?`,
			nanos(until), ownerID, endpoint)
		return err
	})
	if err != nil {
		return fmt.Errorf("record a timeout of an endpoint of %s: %w", ownerID, err)
	}
	return nil
}

func (s *Store) EndpointAnswered(ctx context.Context, ownerID, endpoint string) error {
	if _, err := s.one.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE owner_id = ? AND endpoint = ?`, ownerID, endpoint); err != nil {
		return fmt.Errorf("forget the timeouts of an endpoint of %s: %w", ownerID, err)
	}
	return nil
}
