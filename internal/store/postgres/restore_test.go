package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestRestoreAnalyzes: a restore leaves the tables it filled with the planner's statistics,
// which tables filled in bulk otherwise lack until autovacuum comes by, and vacuumed: every
// page marked visible to all, so that index-only scans (the listings' versions) need not
// look rows up in the table.
func TestRestoreAnalyzes(t *testing.T) {
	ctx := t.Context()
	src := open(t, pgtest.Database(t))
	for i := range 3 {
		u := auth.User{ID: fmt.Sprintf("u%d", i), Name: fmt.Sprintf("user %d", i), CreatedAt: time.Unix(int64(i), 0)}
		if err := src.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	url := pgtest.Database(t)
	dst := open(t, url)
	if _, err := store.Copy(ctx, dst, src); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var columns int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'users'`).Scan(&columns); err != nil {
		t.Fatal(err)
	}
	if columns == 0 {
		t.Error("no statistics of the users table after the restore")
	}
	var pages, visible int
	if err := conn.QueryRow(ctx, `SELECT relpages, relallvisible FROM pg_class WHERE oid = 'users'::regclass`).Scan(&pages, &visible); err != nil {
		t.Fatal(err)
	}
	if pages == 0 || visible != pages {
		t.Errorf("after the restore, %d of the users table's %d pages are marked visible to all", visible, pages)
	}
}
