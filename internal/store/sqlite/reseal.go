package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Reseal reads every sealed value, passes it through fn and writes it back, all in one write
// transaction: an error from fn or from the database leaves every value as it was. Empty values
// hold nothing sealed and are skipped.
func (s *Store) Reseal(ctx context.Context, fn func(sealed []byte) ([]byte, error)) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
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

// sealedColumn is a BLOB column of sealed values. Rows are found again by rowid.
type sealedColumn struct {
	table, column string
}

// sealedColumns lists every sealed BLOB column; settings secrets, kept inside JSON, are
// handled by resealSettings. A new sealed column must be added here.
var sealedColumns = []sealedColumn{
	{"provider_tokens", "token_sealed"},
	{"custom_secrets", "value_sealed"},
	{"sandboxes", "session_key_sealed"},
	{"conversations", "request_sealed"},
	{"conversations", "secrets_sealed"},
	{"webhooks", "secret_sealed"},
	{"keyring_check", "sealed"},
}

type sealedRow struct {
	rowid int64
	value []byte
}

func resealColumn(ctx context.Context, tx *sql.Tx, c sealedColumn, fn func([]byte) ([]byte, error)) error {
	rows, err := collect(ctx, tx, func(sc scanner) (sealedRow, error) {
		var r sealedRow
		err := sc.Scan(&r.rowid, &r.value)
		return r, err
	}, `SELECT rowid, `+c.column+` FROM `+c.table+` WHERE length(`+c.column+`) > 0`)
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", c.table, c.column, err)
	}
	for _, r := range rows {
		v, err := fn(r.value)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", c.table, c.column, err)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE `+c.table+` SET `+c.column+` = ? WHERE rowid = ?`, blobArg(v), r.rowid); err != nil {
			return fmt.Errorf("write %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

func resealSettings(ctx context.Context, tx *sql.Tx, fn func([]byte) ([]byte, error)) error {
	type row struct{ userID, secrets string }
	rows, err := collect(ctx, tx, func(sc scanner) (row, error) {
		var r row
		err := sc.Scan(&r.userID, &r.secrets)
		return r, err
	}, `SELECT user_id, secrets FROM settings`)
	if err != nil {
		return fmt.Errorf("read settings secrets: %w", err)
	}
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
		if _, err := tx.ExecContext(ctx, `UPDATE settings SET secrets = ? WHERE user_id = ?`, enc, r.userID); err != nil {
			return fmt.Errorf("write settings secrets of %s: %w", r.userID, err)
		}
	}
	return nil
}
