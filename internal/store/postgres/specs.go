package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// Command, InitialEnv and Limits of a spec are JSON columns.

func (s *Store) PutSpec(ctx context.Context, spec sandbox.Spec) error {
	if err := s.putSpec(ctx, spec); err != nil {
		return fmt.Errorf("put sandbox spec %s: %w", spec.ID, err)
	}
	return nil
}

func (s *Store) putSpec(ctx context.Context, spec sandbox.Spec) error {
	if err := checkTimes(spec.CreatedAt); err != nil {
		return err
	}
	command, err := jsonArg(spec.Command)
	if err != nil {
		return err
	}
	env, err := jsonArg(spec.InitialEnv)
	if err != nil {
		return err
	}
	limits, err := jsonArg(spec.Limits)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx,
		`INSERT INTO sandbox_specs (id, description, command, initial_env, working_dir, image, rootfs, network, limits, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (id) DO UPDATE SET
			description = excluded.description,
			command = excluded.command,
			initial_env = excluded.initial_env,
			working_dir = excluded.working_dir,
			image = excluded.image,
			rootfs = excluded.rootfs,
			network = excluded.network,
			limits = excluded.limits,
			created_at = excluded.created_at`,
		spec.ID, spec.Description, command, env, spec.WorkingDir, spec.Image, spec.Rootfs, spec.Network,
		limits, spec.CreatedAt)
	return err
}

const specColumns = `id, description, command, initial_env, working_dir, image, rootfs, network, limits, created_at`

func scanSpec(row pgx.Row) (sandbox.Spec, error) {
	var sp sandbox.Spec
	var command, env, limits string
	err := row.Scan(&sp.ID, &sp.Description, &command, &env, &sp.WorkingDir, &sp.Image, &sp.Rootfs,
		&sp.Network, &limits, &sp.CreatedAt)
	if err != nil {
		return sandbox.Spec{}, err
	}
	err = errors.Join(
		json.Unmarshal([]byte(command), &sp.Command),
		json.Unmarshal([]byte(env), &sp.InitialEnv),
		json.Unmarshal([]byte(limits), &sp.Limits))
	if err != nil {
		return sandbox.Spec{}, fmt.Errorf("decode spec %s: %w", sp.ID, err)
	}
	return sp, nil
}

func (s *Store) GetSpec(ctx context.Context, id string) (sandbox.Spec, error) {
	sp, err := scanSpec(s.pool.QueryRow(ctx, `SELECT `+specColumns+` FROM sandbox_specs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = sandbox.ErrSpecNotFound
	}
	if err != nil {
		return sandbox.Spec{}, fmt.Errorf("get sandbox spec %s: %w", id, err)
	}
	return sp, nil
}

// ListSpecs pages by id alone; the cursor's time part is unused.
func (s *Store) ListSpecs(ctx context.Context, q paging.Query) ([]sandbox.Spec, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list sandbox specs: %w", err)
	}
	var w where
	if c != nil {
		w.add(`id > ` + w.arg(c.id))
	}
	sps, err := collect(ctx, s.pool, scanSpec,
		`SELECT `+specColumns+` FROM sandbox_specs`+w.String()+` ORDER BY id`+limit(q.Limit+1), w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list sandbox specs: %w", err)
	}
	sps, next := page(sps, q.Limit, func(sp sandbox.Spec) (int64, string) { return 0, sp.ID })
	return sps, next, nil
}
