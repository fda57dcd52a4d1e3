package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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

// CreateWebhook counts and inserts under the owner's webhooks lock (see countForUser), so that
// concurrent creations cannot both pass the limit.
func (s *Store) CreateWebhook(ctx context.Context, w webhook.Webhook, max int) error {
	err := checkTimes(w.CreatedAt)
	var kinds string
	if err == nil {
		kinds, err = jsonArg(w.Kinds)
	}
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			n, err := countForUser(ctx, tx, lockWebhooks, "owner_id", w.OwnerID)
			if err != nil {
				return err
			}
			if n >= max {
				return webhook.ErrLimit
			}
			_, err = tx.Exec(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
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
	created_at, updated_at, next_attempt_at, retry_until, endpoint`

func scanDelivery(row pgx.Row) (webhook.Delivery, error) {
	var d webhook.Delivery
	var payload, status string
	var code *int32
	var next *time.Time
	if err := row.Scan(&d.ID, &d.WebhookID, &d.OwnerID, &d.Kind, &payload, &status, &d.Attempts, &code, &d.Error,
		&d.CreatedAt, &d.UpdatedAt, &next, &d.RetryUntil, &d.Endpoint); err != nil {
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
			b.Queue(`INSERT INTO webhook_deliveries (id, webhook_id, owner_id, kind, payload, endpoint, created_at,
				status, attempts, response_code, error, updated_at, next_attempt_at, retry_until)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
				append([]any{d.ID, d.WebhookID, d.OwnerID, d.Kind, string(d.Payload), d.Endpoint, d.CreatedAt}, deliveryArgs(d)...)...)
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
		`SELECT `+deliveryColumns+` FROM webhook_deliveries`+w.String()+order("created_at", "id", true)+limit(q.Limit+1),
		w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	ds, next := page(ds, q.Limit, func(d webhook.Delivery) (int64, string) { return timeKey(d.CreatedAt), d.ID })
	return ds, next, nil
}

// claimOwners lists the owners with deliveries due at $1 (their endpoints not paused) and
// fewer attempts under way than the cap per user ($3), the longest waiting first, at most $2.
const claimOwners = `WITH flying AS (
		SELECT owner_id, count(*) AS n FROM webhook_deliveries
		WHERE claimed_until > $1 AND status = 'pending' GROUP BY owner_id)
	SELECT d.owner_id FROM webhook_deliveries d
	LEFT JOIN webhook_endpoints e ON e.owner_id = d.owner_id AND e.endpoint = d.endpoint
	LEFT JOIN flying f ON f.owner_id = d.owner_id
	WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (e.not_before IS NULL OR e.not_before <= $1)
		AND coalesce(f.n, 0) < $3
	GROUP BY d.owner_id ORDER BY min(d.next_attempt_at), d.owner_id LIMIT $2`

// claimPick picks the deliveries a claim takes of the owners $5 (see
// webhook.Store.ClaimDeliveries), at $1, with the caps per endpoint ($2) and per user ($3) and
// the limit ($4). A delivery's place among its endpoint's due ones, after those under way,
// must be within the endpoint's cap; of those left, its turn among its owner's, after those
// under way, within the user's cap; turns interleave the users.
const claimPick = `WITH flying AS (
		SELECT owner_id, endpoint FROM webhook_deliveries
		WHERE claimed_until > $1 AND status = 'pending' AND owner_id = ANY($5)),
	due AS (
		SELECT d.id, d.owner_id, d.next_attempt_at,
			row_number() OVER (PARTITION BY d.owner_id, d.endpoint ORDER BY d.next_attempt_at, d.id)
				+ (SELECT count(*) FROM flying f WHERE f.owner_id = d.owner_id AND f.endpoint = d.endpoint) AS place
		FROM webhook_deliveries d
		LEFT JOIN webhook_endpoints e ON e.owner_id = d.owner_id AND e.endpoint = d.endpoint
		WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND d.owner_id = ANY($5)
			AND (e.not_before IS NULL OR e.not_before <= $1)),
	open AS (
		SELECT id, owner_id, next_attempt_at,
			row_number() OVER (PARTITION BY owner_id ORDER BY next_attempt_at, id) AS turn
		FROM due WHERE place <= $2)
	SELECT id FROM open
	WHERE turn + (SELECT count(*) FROM flying f WHERE f.owner_id = open.owner_id) <= $3
	ORDER BY turn, next_attempt_at, id LIMIT $4`

// capOf is a cap for SQL: zero bounds nothing.
func capOf(n int) int {
	if n <= 0 {
		return math.MaxInt32
	}
	return n
}

// ClaimDeliveries claims in one transaction. It first takes, with pg_try_advisory_xact_lock,
// a claim lock per owner with deliveries due, skipping the owners whose lock another
// replica's claim holds (their deliveries are that claim's to take, as SKIP LOCKED leaves a
// row); so no two claims count one owner's attempts under way at once, and together they
// never pass the caps. It then picks within the caps, and takes the picked rows with FOR
// UPDATE SKIP LOCKED (a row another transaction is changing is left for the next claim).
func (s *Store) ClaimDeliveries(ctx context.Context, c webhook.Claim) ([]webhook.Delivery, error) {
	if err := checkTimes(c.Now, c.LeaseUntil); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	var ds []webhook.Delivery
	err := s.write(ctx, func(tx pgx.Tx) error {
		owners, err := collect(ctx, tx, scanString, claimOwners, c.Now, max(4*c.Limit, 16), capOf(c.PerUser))
		if err != nil || len(owners) == 0 {
			return err
		}
		if owners, err = collect(ctx, tx, scanString, `SELECT o FROM unnest($1::text[]) WITH ORDINALITY AS t (o, i)
			WHERE pg_try_advisory_xact_lock(hashtextextended($2 || ':' || o, 0)) ORDER BY i`, owners, lockWebhookClaims); err != nil || len(owners) == 0 {
			return err
		}
		ids, err := collect(ctx, tx, scanString, claimPick, c.Now, capOf(c.PerEndpoint), capOf(c.PerUser), c.Limit, owners)
		if err != nil || len(ids) == 0 {
			return err
		}
		ds, err = collect(ctx, tx, scanClaimed, `WITH picked AS (
				SELECT id FROM webhook_deliveries WHERE id = ANY($1) AND status = 'pending' AND next_attempt_at <= $2
				FOR UPDATE SKIP LOCKED)
			UPDATE webhook_deliveries d SET next_attempt_at = $3, claimed_until = $3 FROM picked WHERE d.id = picked.id
			RETURNING `+deliveryColumnsOf("d")+`,
				(SELECT timeouts FROM webhook_endpoints e WHERE e.owner_id = d.owner_id AND e.endpoint = d.endpoint)`,
			ids, c.Now, c.LeaseUntil)
		if err != nil {
			return err
		}
		order := make(map[string]int, len(ids))
		for i, id := range ids {
			order[id] = i
		}
		slices.SortFunc(ds, func(a, b webhook.Delivery) int { return order[a.ID] - order[b.ID] })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return ds, nil
}

func scanString(row pgx.Row) (string, error) {
	var v string
	return v, row.Scan(&v)
}

// scanClaimed scans deliveryColumns and then the endpoint's timeouts (NULL: none).
func scanClaimed(row pgx.Row) (webhook.Delivery, error) {
	var timeouts *int32
	d, err := scanDelivery(extraRow{row, []any{&timeouts}})
	if timeouts != nil {
		d.EndpointTimeouts = int(*timeouts)
	}
	return d, err
}

// extraRow scans into the destinations given and then into extra.
type extraRow struct {
	row   pgx.Row
	extra []any
}

func (e extraRow) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }

// deliveryColumnsOf is deliveryColumns of the table called alias.
func deliveryColumnsOf(alias string) string {
	return alias + `.id, ` + alias + `.webhook_id, ` + alias + `.owner_id, ` + alias + `.kind, ` + alias + `.payload, ` +
		alias + `.status, ` + alias + `.attempts, ` + alias + `.response_code, ` + alias + `.error, ` + alias + `.created_at, ` +
		alias + `.updated_at, ` + alias + `.next_attempt_at, ` + alias + `.retry_until, ` + alias + `.endpoint`
}

func (s *Store) NextDeliveryAt(ctx context.Context) (time.Time, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(greatest(d.next_attempt_at, e.not_before)) FROM webhook_deliveries d
		LEFT JOIN webhook_endpoints e ON e.owner_id = d.owner_id AND e.endpoint = d.endpoint
		WHERE d.status = 'pending'`).Scan(&next); err != nil {
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
			error = $4, updated_at = $5, next_attempt_at = $6, retry_until = $7, claimed_until = NULL WHERE id = $8 AND owner_id = $9`,
			append(deliveryArgs(d), d.ID, d.OwnerID)...)
	}
	if err != nil {
		return fmt.Errorf("update delivery %s: %w", d.ID, err)
	}
	return nil
}

func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1`, timeArg(before))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE not_before < $1`, timeArg(before))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return int(n), nil
}

func (s *Store) EndpointTimedOut(ctx context.Context, ownerID, endpoint string, now time.Time, pause func(n int) time.Duration) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (owner_id, endpoint, timeouts, not_before) VALUES ($1, $2, 1, $3)
			ON CONFLICT (owner_id, endpoint) DO UPDATE SET timeouts = webhook_endpoints.timeouts + 1 RETURNING timeouts`,
			ownerID, endpoint, now).Scan(&n); err != nil {
			return err
		}
		until := now.Add(pause(n))
		if err := checkTimes(until); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET not_before = $1 WHERE owner_id = $2 AND endpoint = $3`,
			until, ownerID, endpoint)
		return err
	})
	if err != nil {
		return fmt.Errorf("record a timeout of an endpoint of %s: %w", ownerID, err)
	}
	return nil
}

func (s *Store) EndpointAnswered(ctx context.Context, ownerID, endpoint string) error {
	if _, err := s.exec(ctx, `DELETE FROM webhook_endpoints WHERE owner_id = $1 AND endpoint = $2`, ownerID, endpoint); err != nil {
		return fmt.Errorf("forget the timeouts of an endpoint of %s: %w", ownerID, err)
	}
	return nil
}
