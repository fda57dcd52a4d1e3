package sqlite

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/store"
)

// TestCopyKeepsWhatSQLiteKeeps: a copy from SQLite to SQLite keeps times to the nanosecond
// (the shared suite uses microseconds, which every store keeps), and tells a BLOB of no bytes
// from NULL, which the driver reads alike: a NOT NULL column of no bytes is copied as such.
func TestCopyKeepsWhatSQLiteKeeps(t *testing.T) {
	ctx := t.Context()
	src, dst := openTemp(t), openTemp(t)
	u := auth.User{ID: "u1", Name: "one", CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)}
	if err := src.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	sec := customsecret.Secret{Name: "EMPTY", ValueSealed: []byte{}, CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt}
	if err := src.CreateCustomSecret(ctx, u.ID, sec, customsecret.MaxPerUser); err != nil {
		t.Fatal(err)
	}
	var value any
	err := src.Dump(ctx, func(r store.Row) error {
		if r.Table == "custom_secrets" {
			value = r.Cols["value_sealed"]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := value.([]byte); !ok || b == nil || len(b) != 0 {
		t.Errorf("a sealed value of no bytes dumps as %#v, want []byte{}", value)
	}
	if _, err := store.Copy(ctx, dst, src); err != nil {
		t.Fatal(err)
	}
	got, err := dst.GetUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("user after the copy %+v, want %+v", got, u)
	}
	var n int
	if err := dst.r.QueryRowContext(ctx, `SELECT count(*) FROM custom_secrets WHERE typeof(value_sealed) = 'blob' AND length(value_sealed) = 0`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d sealed values of no bytes after the copy, want 1", n)
	}
}
