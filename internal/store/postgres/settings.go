package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/settings"
)

// Secrets are kept as one JSON object of base64 strings (encoding/json's form for []byte).

func (s *Store) GetSettings(ctx context.Context, userID string) (settings.Record, error) {
	r := settings.Record{UserID: userID}
	var values *string
	var secrets string
	err := s.pool.QueryRow(ctx,
		`SELECT values_json, secrets, updated_at FROM settings WHERE user_id = $1`, userID).
		Scan(&values, &secrets, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = settings.ErrNotFound
	}
	if err == nil {
		err = json.Unmarshal([]byte(secrets), &r.Secrets)
	}
	if err != nil {
		return settings.Record{}, fmt.Errorf("get settings of %s: %w", userID, err)
	}
	r.Values = fromRaw(values)
	return r, nil
}

func (s *Store) PutSettings(ctx context.Context, r settings.Record) error {
	err := checkTimes(r.UpdatedAt)
	var secrets string
	if err == nil {
		secrets, err = jsonArg(r.Secrets)
	}
	if err == nil {
		_, err = s.exec(ctx,
			`INSERT INTO settings (user_id, values_json, secrets, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id) DO UPDATE SET
				values_json = excluded.values_json,
				secrets = excluded.secrets,
				updated_at = excluded.updated_at`,
			r.UserID, rawArg(r.Values), secrets, r.UpdatedAt)
	}
	if err != nil {
		return fmt.Errorf("put settings of %s: %w", r.UserID, err)
	}
	return nil
}
