package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// An empty ownerID means any owner throughout, as sandbox.Store specifies. Instance is a JSON
// column.

// CreateSandbox counts the owner's live sandboxes under a lock that every start of theirs
// takes (lockUser), so that two replicas starting at once cannot both take the last place.
func (s *Store) CreateSandbox(ctx context.Context, sb sandbox.Sandbox, maxLive int) error {
	err := checkTimes(sb.CreatedAt, sb.UpdatedAt)
	var inst string
	if err == nil {
		inst, err = jsonArg(sb.Instance)
	}
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			if maxLive > 0 {
				if err := lockUser(ctx, tx, lockSandboxes, sb.OwnerID); err != nil {
					return err
				}
				var n int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM sandboxes WHERE owner_id = $1 AND status IN ('STARTING', 'RUNNING')`,
					sb.OwnerID).Scan(&n); err != nil {
					return err
				}
				if n >= maxLive {
					return sandbox.ErrLimit
				}
			}
			_, err := tx.Exec(ctx,
				`INSERT INTO sandboxes (id, owner_id, spec_id, backend, node, status, detail, session_key_sealed, session_key_hash, instance, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				sb.ID, sb.OwnerID, sb.SpecID, sb.Backend, sb.Node, string(sb.Status), sb.Detail, blobArg(sb.SessionKeySealed),
				blobArg(sb.SessionKeyHash), inst, sb.CreatedAt, sb.UpdatedAt)
			if isUnique(err) {
				// sandbox has no sentinel for this: ids and keys are generated, so a clash is a bug.
				err = errors.New("id or session key already exists")
			}
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", sb.ID, err)
	}
	return nil
}

func (s *Store) AdoptSandboxes(ctx context.Context, backend, node string) (int, error) {
	tag, err := s.exec(ctx, `UPDATE sandboxes SET node = $1 WHERE backend = $2 AND node = ''`, node, backend)
	if err != nil {
		return 0, fmt.Errorf("adopt sandboxes: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const sandboxColumns = `id, owner_id, spec_id, backend, node, status, detail, session_key_sealed, session_key_hash, instance, created_at, updated_at, active_at`

// listedSandboxColumns are sandboxColumns less the instance, which a listing does not carry
// (see sandbox.Store).
const listedSandboxColumns = `id, owner_id, spec_id, backend, node, status, detail, session_key_sealed, session_key_hash, '', created_at, updated_at, active_at`

// scanSandbox scans sandboxColumns or listedSandboxColumns.
func scanSandbox(row pgx.Row) (sandbox.Sandbox, error) { return scanSandboxWith(row) }

// scanSandboxWith scans sandboxColumns or listedSandboxColumns, and those after them into
// extra.
func scanSandboxWith(row pgx.Row, extra ...any) (sandbox.Sandbox, error) {
	var sb sandbox.Sandbox
	var status, inst string
	var active *time.Time
	err := row.Scan(append([]any{&sb.ID, &sb.OwnerID, &sb.SpecID, &sb.Backend, &sb.Node, &status, &sb.Detail, &sb.SessionKeySealed,
		&sb.SessionKeyHash, &inst, &sb.CreatedAt, &sb.UpdatedAt, &active}, extra...)...)
	if err != nil {
		return sandbox.Sandbox{}, err
	}
	if active != nil {
		sb.ActiveAt = *active
	}
	sb.Status = sandbox.Status(status)
	if inst != "" { // empty in a listing
		if err := json.Unmarshal([]byte(inst), &sb.Instance); err != nil {
			return sandbox.Sandbox{}, fmt.Errorf("decode instance of sandbox %s: %w", sb.ID, err)
		}
	}
	return sb, nil
}

// ownedBy adds the owner condition unless ownerID is empty (any owner).
func ownedBy(w *where, col, ownerID string) {
	if ownerID != "" {
		w.add(col + " = " + w.arg(ownerID))
	}
}

func (s *Store) GetSandbox(ctx context.Context, ownerID, id string) (sandbox.Sandbox, error) {
	sb, err := getSandbox(ctx, s.pool, ownerID, id)
	if err != nil {
		return sandbox.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	return sb, nil
}

func getSandbox(ctx context.Context, q querier, ownerID, id string) (sandbox.Sandbox, error) {
	var w where
	w.add("id = " + w.arg(id))
	ownedBy(&w, "owner_id", ownerID)
	sb, err := scanSandbox(q.QueryRow(ctx, `SELECT `+sandboxColumns+` FROM sandboxes`+w.String(), w.args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return sandbox.Sandbox{}, sandbox.ErrNotFound
	}
	return sb, err
}

func (s *Store) SandboxBySessionKeyHash(ctx context.Context, hash []byte) (sandbox.Sandbox, error) {
	if len(hash) == 0 {
		return sandbox.Sandbox{}, fmt.Errorf("sandbox by session key: %w", sandbox.ErrNotFound)
	}
	sb, err := scanSandbox(s.pool.QueryRow(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE session_key_hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		err = sandbox.ErrNotFound
	}
	if err != nil {
		return sandbox.Sandbox{}, fmt.Errorf("sandbox by session key: %w", err)
	}
	return sb, nil
}

func (s *Store) SetSessionKeyHash(ctx context.Context, id string, hash []byte) error {
	err := s.execOne(ctx, sandbox.ErrNotFound, `UPDATE sandboxes SET session_key_hash = $1 WHERE id = $2`, blobArg(hash), id)
	if err != nil {
		return fmt.Errorf("set session key hash of sandbox %s: %w", id, err)
	}
	return nil
}

func (s *Store) ListSandboxes(ctx context.Context, ownerID string, q paging.Query) ([]sandbox.Sandbox, string, error) {
	ls, next, err := s.ListSandboxVersions(ctx, ownerID, q)
	if err != nil {
		return nil, "", err
	}
	sbs, err := at(ctx, s, listedSandboxes, listingcache.Versions(ls))
	if err != nil {
		return nil, "", fmt.Errorf("list sandboxes: %w", err)
	}
	return sbs, next, nil
}

func (s *Store) ListSandboxVersions(ctx context.Context, ownerID string, q paging.Query) ([]paging.Listed, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list sandboxes: %w", err)
	}
	var w where
	ownedBy(&w, "owner_id", ownerID)
	keyset(&w, "created_at", "id", true, c)
	ls, next, err := readListed(ctx, s, `SELECT id, created_at, rev FROM sandboxes`+w.String()+order("created_at", "id", true), &w, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list sandboxes: %w", err)
	}
	return ls, next, nil
}

func (s *Store) SandboxesAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]sandbox.Sandbox, error) {
	return ownedAt(ctx, s, listedSandboxes, ownerID, ls, "sandboxes")
}

// LiveSandboxes reads through the partial index sandboxes_live.
func (s *Store) LiveSandboxes(ctx context.Context) ([]sandbox.Sandbox, error) {
	sbs, err := collect(ctx, s.pool, scanSandbox, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE status IN ('STARTING', 'RUNNING', 'PAUSED')`)
	if err != nil {
		return nil, fmt.Errorf("list live sandboxes: %w", err)
	}
	return sbs, nil
}

func (s *Store) AllSandboxes(ctx context.Context) ([]sandbox.Sandbox, error) {
	sbs, err := collect(ctx, s.pool, scanSandbox, `SELECT `+sandboxColumns+` FROM sandboxes ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list all sandboxes: %w", err)
	}
	return sbs, nil
}

// UpdateSandbox is scoped to sb.OwnerID unless it is empty. The compare and set is one
// UPDATE: at READ COMMITTED, an UPDATE that waited for a concurrent one checks its condition
// again on the row that one left, so of several updates from the same status one wins. When
// it changes nothing, a second look tells ErrNotFound from ErrState.
func (s *Store) UpdateSandbox(ctx context.Context, sb sandbox.Sandbox, prev sandbox.Status) error {
	err := checkTimes(sb.UpdatedAt)
	var inst string
	if err == nil {
		inst, err = jsonArg(sb.Instance)
	}
	if err == nil {
		var w where
		sets := `status = ` + w.arg(string(sb.Status)) + `, detail = ` + w.arg(sb.Detail) +
			`, instance = ` + w.arg(inst) + `, updated_at = ` + w.arg(sb.UpdatedAt)
		w.add("id = " + w.arg(sb.ID))
		ownedBy(&w, "owner_id", sb.OwnerID)
		w.add("status = " + w.arg(string(prev)))
		var tag pgconn.CommandTag
		tag, err = s.exec(ctx, `UPDATE sandboxes SET `+sets+w.String(), w.args...)
		if err == nil && tag.RowsAffected() == 0 {
			var cur sandbox.Sandbox
			if cur, err = getSandbox(ctx, s.pool, sb.OwnerID, sb.ID); err == nil {
				err = fmt.Errorf("status is %s, not %s: %w", cur.Status, prev, sandbox.ErrState)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("update sandbox %s: %w", sb.ID, err)
	}
	return nil
}

func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	if err := s.execOne(ctx, sandbox.ErrNotFound, `DELETE FROM sandboxes WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// CountSandboxes counts every status when statuses is empty.
func (s *Store) CountSandboxes(ctx context.Context, ownerID string, statuses ...sandbox.Status) (int, error) {
	var w where
	ownedBy(&w, "owner_id", ownerID)
	if len(statuses) > 0 {
		sts := make([]string, len(statuses))
		for i, st := range statuses {
			sts[i] = string(st)
		}
		w.add("status = ANY(" + w.arg(sts) + ")")
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sandboxes`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count sandboxes: %w", err)
	}
	return n, nil
}

func (s *Store) ClaimReconciler(ctx context.Context, backend, holder string, ttl time.Duration) (bool, error) {
	tag, err := s.exec(ctx, `INSERT INTO sandbox_reconcilers (backend, holder, expires_at)
		VALUES ($1, $2, now() + $3 * interval '1 microsecond')
		ON CONFLICT (backend) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE sandbox_reconcilers.holder = excluded.holder OR sandbox_reconcilers.expires_at < now()`,
		backend, holder, ttl.Microseconds())
	if err != nil {
		return false, fmt.Errorf("claim the reconciler of %s: %w", backend, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) TouchSandboxes(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.exec(ctx, `UPDATE sandboxes SET active_at = $1 WHERE id = ANY($2) AND (active_at IS NULL OR active_at < $1)`, at, ids); err != nil {
		return fmt.Errorf("touch sandboxes: %w", err)
	}
	return nil
}
