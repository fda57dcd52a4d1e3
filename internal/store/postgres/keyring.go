package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// KeyringCheck returns the stored check value, sealing and storing one first if there is
// none. Replicas starting together on an empty database each seal one; the first insert
// wins and the others read it back.
func (s *Store) KeyringCheck(ctx context.Context, seal func() ([]byte, error)) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT sealed FROM keyring_check WHERE id = 1`).Scan(&sealed)
	if err == nil {
		return sealed, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read keyring check: %w", err)
	}
	mine, err := seal()
	if err != nil {
		return nil, fmt.Errorf("store keyring check: %w", err)
	}
	if _, err := s.exec(ctx, `INSERT INTO keyring_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, mine); err != nil {
		return nil, fmt.Errorf("store keyring check: %w", err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT sealed FROM keyring_check WHERE id = 1`).Scan(&sealed); err != nil {
		return nil, fmt.Errorf("read keyring check: %w", err)
	}
	return sealed, nil
}
