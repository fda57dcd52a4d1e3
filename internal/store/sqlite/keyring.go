package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// KeyringCheck returns the stored check value, sealing and storing one first if there is
// none (in the same write transaction, so two first starts keep one).
func (s *Store) KeyringCheck(ctx context.Context, seal func() ([]byte, error)) ([]byte, error) {
	var sealed []byte
	err := s.r.QueryRowContext(ctx, `SELECT sealed FROM keyring_check WHERE id = 1`).Scan(&sealed)
	if err == nil {
		return sealed, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read keyring check: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT sealed FROM keyring_check WHERE id = 1`).Scan(&sealed)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if sealed, err = seal(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO keyring_check (id, sealed) VALUES (1, ?)`, sealed)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store keyring check: %w", err)
	}
	return sealed, nil
}
