package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// TestMigrate: agentd migrate refuses a data directory that a server uses, touching nothing;
// with the server stopped it copies the store that the server made into an empty PostgreSQL
// database, where every row reads as it was (times to the microsecond) and the data
// directory's keyring opens the sealed secrets; it refuses to copy again into the database,
// which it leaves as it was.
func TestMigrate(t *testing.T) {
	t.Parallel()
	const (
		key    = "migrate-admin-key-0123456789"
		llmKey = "sk-migrate-secret"
	)
	url := pgtest.Database(t)
	dir := newDataDir(t)
	s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key})
	admin := s.client(key)
	adminID := admin.me().ID
	admin.do("POST", "/api/settings", map[string]any{"llm_model": "m", "llm_api_key": llmKey}, http.StatusOK, nil)
	task := admin.waitTaskReady(admin.startConversationV1("hello from SQLite").ID)
	settleAgents(t, admin)
	convID := deref(task.AppConversationID)

	_, stderr, code := runAgentd(t, nil, "migrate", "--data-dir", dir, "--to", url)
	if code != 1 || !strings.Contains(stderr, "in use by another agentd process") || !strings.Contains(stderr, "stop agentd serve") {
		t.Errorf("migrate beside a running server: exit %d, stderr:\n%s", code, stderr)
	}
	if n := tablesIn(t, url); n != 0 {
		t.Errorf("a refused migrate made %d tables in the database", n)
	}

	if code, _ := s.stop(); code != 0 {
		t.Fatalf("server exited %d", code)
	}
	src, err := sqlite.Open(t.Context(), filepath.Join(dir, app.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	want := dumpRows(t, src)
	wantLog, err := src.ConversationEvents(t.Context(), convID, 0)
	if err != nil || len(wantLog) == 0 {
		t.Fatalf("events of %s in the data directory: %d, %v", convID, len(wantLog), err)
	}
	src.Close()

	stdout, stderr, code := runAgentd(t, nil, "migrate", "--data-dir", dir, "--to", url)
	if code != 0 {
		t.Fatalf("migrate: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for table, n := range tally(want) {
		if !regexp.MustCompile(`(?m)^  ` + table + ` +` + fmt.Sprint(n) + `$`).MatchString(stdout) {
			t.Errorf("migrate's output does not say %d rows of %s:\n%s", n, table, stdout)
		}
	}
	for _, s := range []string{filepath.Join(dir, app.KeyringFile), "copied as they are", "--database"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("migrate's output does not say %q:\n%s", s, stdout)
		}
	}

	dst, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	got := dumpRows(t, dst)
	sameRows(t, got, want)
	gotLog, err := dst.ConversationEvents(t.Context(), convID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotLog) != len(wantLog) {
		t.Fatalf("%d events after migrate, want %d", len(gotLog), len(wantLog))
	}
	for i := range wantLog {
		if g, w := gotLog[i], wantLog[i]; g.ID != w.ID || g.Seq != w.Seq || string(g.Body) != string(w.Body) {
			t.Errorf("event %d after migrate: %s seq %d, want %s seq %d (same body: %v)", i, g.ID, g.Seq, w.ID, w.Seq, string(g.Body) == string(w.Body))
		}
	}
	kr, err := secret.LoadOrCreate(filepath.Join(dir, app.KeyringFile))
	if err != nil {
		t.Fatal(err)
	}
	set, err := dst.GetSettings(t.Context(), adminID)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := kr.OpenString(set.Secrets["llm_api_key"]); err != nil || plain != llmKey {
		t.Errorf("the copied LLM key opens with the data directory's keyring as %q, %v", plain, err)
	}

	_, stderr, code = runAgentd(t, nil, "migrate", "--data-dir", dir, "--to", url)
	if code != 1 || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "copied nothing") {
		t.Errorf("migrate into a database that holds data: exit %d, stderr:\n%s", code, stderr)
	}
	sameRows(t, dumpRows(t, dst), got)

	// The server the output tells of: on the database, with the data directory's keyring,
	// it finds the user, their sealed settings and the conversation, and goes on with it.
	s = startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key}, "--database", url,
		"--keyring-file", filepath.Join(dir, app.KeyringFile))
	admin = s.client(key)
	if me := admin.me(); me.ID != adminID {
		t.Fatalf("admin on PostgreSQL: %s, want %s", me.ID, adminID)
	}
	var view struct {
		LLMAPIKeySet bool `json:"llm_api_key_set"`
	}
	admin.do("GET", "/api/settings", nil, http.StatusOK, &view)
	if !view.LLMAPIKeySet {
		t.Error("the migrated LLM key is not set on PostgreSQL")
	}
	before := len(gotLog)
	admin.do("POST", "/api/v1/app-conversations/"+convID+"/send-message", map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": "and on PostgreSQL"}}, "run": true}, http.StatusOK, nil)
	settleAgents(t, admin)
	after, err := dst.ConversationEvents(t.Context(), convID, 0)
	if err != nil || len(after) <= before+1 {
		t.Fatalf("the conversation did not go on on PostgreSQL: %d events (had %d), %v", len(after), before, err)
	}
	for i := 1; i < len(after); i++ {
		if after[i].Seq <= after[i-1].Seq {
			t.Fatalf("events out of order after the migration: seq %d after %d", after[i].Seq, after[i-1].Seq)
		}
	}
}

// TestMigrateUsage: migrate without --to is a usage error, and on a directory without a
// database it says so and leaves the directory alone.
func TestMigrateUsage(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	_, stderr, code := runAgentd(t, nil, "migrate", "--data-dir", dir)
	if code != 2 || !strings.Contains(stderr, "needs --to") {
		t.Errorf("migrate without --to: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = runAgentd(t, nil, "migrate", "--data-dir", dir, "--to", "postgres://nobody@127.0.0.1:1/none")
	if code != 1 || !strings.Contains(stderr, "has no agentd.db") {
		t.Errorf("migrate of a directory without a database: exit %d, stderr:\n%s", code, stderr)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("migrate of a directory without a database made %v (%v)", entries, err)
	}
}

// dumpRows reads the whole dump of s.
func dumpRows(t *testing.T, s store.Store) []store.Row {
	t.Helper()
	var rows []store.Row
	err := s.(store.Dumper).Dump(t.Context(), func(r store.Row) error {
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// tally counts the rows of each table of a dump.
func tally(rows []store.Row) map[string]int {
	n := map[string]int{}
	for _, r := range rows {
		if r.Table != store.SeqTable {
			n[r.Table]++
		}
	}
	return n
}

// sameRows fails unless got holds the rows of want, in order, each column as it was but for
// times, which PostgreSQL keeps to the microsecond, and the SQLite store's listing counters,
// which it does not keep.
func sameRows(t *testing.T, got, want []store.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d (tables %v, want %v)", len(got), len(want), tally(got), tally(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Table != w.Table {
			t.Fatalf("row %d of %s, want of %s", i, g.Table, w.Table)
		}
		for col, wv := range w.Cols {
			if col == "rev" {
				continue
			}
			if tm, ok := wv.(time.Time); ok {
				wv = tm.Truncate(time.Microsecond)
			}
			if gv := g.Cols[col]; !reflect.DeepEqual(gv, wv) {
				t.Errorf("%s row %d, %s: %#v, want %#v", w.Table, i, col, gv, wv)
			}
		}
	}
}

// tablesIn counts the tables of the database at url.
func tablesIn(t *testing.T, url string) int {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
