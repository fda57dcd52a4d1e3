package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Reseal reads every sealed value, passes it through fn and writes it back, all in one
// transaction: an error from fn or from the database leaves every value as it was. Empty
// values hold nothing sealed and are skipped.
//
// The transaction first locks the tables that hold sealed values against writes (SHARE ROW
// EXCLUSIVE: reads go on, writes wait until the reseal ends), as the SQLite store's single
// writer does: the reseal covers every value as of one moment, and no value written
// meanwhile escapes it or is overwritten by the reseal of the value it replaced. Key rotation
// is rare (agentd rotate runs with the server stopped), so writers seldom wait for it.
func (s *Store) Reseal(ctx context.Context, fn func(sealed []byte) ([]byte, error)) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE settings, provider_tokens, custom_secrets, sandboxes, conversations, webhooks, keyring_check
			IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		if err := resealSettings(ctx, tx, fn); err != nil {
			return err
		}
		for _, c := range sealedColumns {
			if err := resealColumn(ctx, tx, c, fn); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reseal: %w", err)
	}
	return nil
}

// sealedColumn is a bytea column of sealed values.
type sealedColumn struct {
	table, column string
}

// sealedColumns lists every sealed bytea column; settings secrets, kept inside JSON, are
// handled by resealSettings. A new sealed column must be added here, and its table to the
// LOCK of Reseal.
var sealedColumns = []sealedColumn{
	{"provider_tokens", "token_sealed"},
	{"custom_secrets", "value_sealed"},
	{"sandboxes", "session_key_sealed"},
	{"conversations", "request_sealed"},
	{"conversations", "secrets_sealed"},
	{"webhooks", "secret_sealed"},
	{"keyring_check", "sealed"},
}

// sealedRow is a row's sealed value; rows are found again by ctid, which no one else changes
// while the tables are locked.
type sealedRow struct {
	ctid  pgtype.TID
	value []byte
}

func resealColumn(ctx context.Context, tx pgx.Tx, c sealedColumn, fn func([]byte) ([]byte, error)) error {
	rows, err := collect(ctx, tx, func(row pgx.Row) (sealedRow, error) {
		var r sealedRow
		err := row.Scan(&r.ctid, &r.value)
		return r, err
	}, `SELECT ctid, `+c.column+` FROM `+c.table+` WHERE length(`+c.column+`) > 0`)
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", c.table, c.column, err)
	}
	var b pgx.Batch
	for _, r := range rows {
		v, err := fn(r.value)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", c.table, c.column, err)
		}
		b.Queue(`UPDATE `+c.table+` SET `+c.column+` = $1 WHERE ctid = $2`, blobArg(v), r.ctid)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("write %s.%s: %w", c.table, c.column, err)
	}
	return nil
}

func resealSettings(ctx context.Context, tx pgx.Tx, fn func([]byte) ([]byte, error)) error {
	type row struct{ userID, secrets string }
	rows, err := collect(ctx, tx, func(r pgx.Row) (row, error) {
		var v row
		err := r.Scan(&v.userID, &v.secrets)
		return v, err
	}, `SELECT user_id, secrets FROM settings`)
	if err != nil {
		return fmt.Errorf("read settings secrets: %w", err)
	}
	var b pgx.Batch
	for _, r := range rows {
		var secrets map[string][]byte
		if err := json.Unmarshal([]byte(r.secrets), &secrets); err != nil {
			return fmt.Errorf("decode settings secrets of %s: %w", r.userID, err)
		}
		if len(secrets) == 0 {
			continue
		}
		for name, v := range secrets {
			if len(v) == 0 {
				continue
			}
			if secrets[name], err = fn(v); err != nil {
				return fmt.Errorf("settings secret %s of %s: %w", name, r.userID, err)
			}
		}
		enc, err := jsonArg(secrets)
		if err != nil {
			return err
		}
		b.Queue(`UPDATE settings SET secrets = $1 WHERE user_id = $2`, enc, r.userID)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("write settings secrets: %w", err)
	}
	return nil
}
