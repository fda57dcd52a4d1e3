package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// listingRequests are the listings the stores must answer alike: every listing of the API,
// paged, filtered, sorted, counted.
func listingRequests(conv string) []string {
	reqs := []string{
		"/api/v1/app-conversations/search",
		"/api/v1/app-conversations/search?limit=2",
		"/api/v1/app-conversations/search?title__contains=ALPHA",
		"/api/v1/app-conversations/search?include_sub_conversations=true&limit=3",
		"/api/v1/app-conversations/count",
		"/api/v1/app-conversations/start-tasks/search?limit=2",
		"/api/v1/app-conversations/start-tasks/search?sort_order=UPDATED_AT_DESC",
		"/api/conversations?limit=2",
		"/api/v1/sandboxes/search?limit=2",
		"/api/v1/events/search?limit=5",
		"/api/v1/events/search?conversation_id__eq=" + conv + "&sort_order=TIMESTAMP_DESC&limit=4",
		"/api/v1/events/search?conversation_id__eq=" + conv + "&kind__eq=MessageEvent",
		"/api/v1/events/count?conversation_id__eq=" + conv,
		"/api/v1/secrets/search?limit=2",
		"/api/v1/secrets/search?name__contains=token",
	}
	return reqs
}

// pages follows a listing's next_page_id to its end and returns each page's body.
func pages(e *env, key, path string) []string {
	e.t.Helper()
	var out []string
	pageID := ""
	for n := 0; n < 100; n++ {
		p := path
		if pageID != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "page_id=" + url.QueryEscape(pageID)
		}
		status, body := e.call("GET", p, key, nil)
		if status != 200 {
			e.t.Fatalf("GET %s: %d %s", p, status, body)
		}
		out = append(out, fmt.Sprintf("%s %s", p, body))
		var page struct {
			NextPageID *string `json:"next_page_id"`
		}
		if json.Unmarshal(body, &page) != nil || page.NextPageID == nil {
			return out
		}
		pageID = *page.NextPageID
	}
	e.t.Fatalf("%s: more than 100 pages", path)
	return nil
}

// TestListingsAlikeOnBothStores: a server's data copied from SQLite to PostgreSQL and back
// (so that both hold the same rows, their times to the microsecond PostgreSQL keeps) is
// answered the same bytes by a server on each: every listing, page by page, its cursors,
// filters, sorts and counts included.
func TestListingsAlikeOnBothStores(t *testing.T) {
	t.Parallel()
	src := newEnv(t)
	_, userKey := src.newUser("lister")
	for i, title := range []string{"alpha one", "Beta", "ALPHA two", "gamma"} {
		c := src.startAgent(userKey, map[string]any{"title": title,
			"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("message %d", i)}}}})
		src.must("POST", "/api/v1/app-conversations/"+c.id+"/send-message", userKey, map[string]any{
			"role": "user", "content": []any{map[string]any{"type": "text", "text": "and more"}}}, 200, nil)
	}
	for _, name := range []string{"API_TOKEN", "deploy_token", "Z_KEY"} {
		src.must("POST", "/api/v1/secrets", userKey, map[string]any{"name": name, "value": "value-of-" + name}, 201, nil)
	}
	// Settled is finished, with no loop left and the last message answered: a message that
	// reaches a finished agent makes it idle before it runs again, a message that arrives as a
	// run ends makes the loop run once more after it recorded finished, and an agent still
	// under way would go on, at different times, in both copies.
	src.eventually("the agents to settle", func() bool {
		var all struct {
			Items []struct {
				ID              string `json:"id"`
				CreatedBy       string `json:"created_by_user_id"`
				ExecutionStatus string `json:"execution_status"`
			} `json:"items"`
		}
		src.must("GET", "/api/v1/app-conversations/search?limit=100", userKey, nil, 200, &all)
		settled := 0
		for _, it := range all.Items {
			if it.ExecutionStatus == "finished" && !src.app.Conversations.AgentRunning(it.ID) && src.answered(it.CreatedBy, it.ID) {
				settled++
			}
		}
		return settled == 4
	})
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	src.must("GET", "/api/v1/app-conversations/search", userKey, nil, 200, &page)
	conv := page.Items[0].ID
	src.stop()
	// The copies keep the records of its sandboxes, which neither server below reaches (their
	// data directories are other nodes): their processes can go.
	src.destroySandboxes()

	// SQLite → PostgreSQL → a new SQLite data directory.
	ctx := t.Context()
	from, err := sqlite.Open(ctx, filepath.Join(src.cfg.DataDir, app.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Database(t)
	pg, err := postgres.Open(ctx, db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, pg, from); err != nil {
		t.Fatal(err)
	}
	from.Close()
	dir := sandboxtest.ShortDir(t)
	back, err := sqlite.Open(ctx, filepath.Join(dir, app.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, back, pg); err != nil {
		t.Fatal(err)
	}
	back.Close()
	pg.Close()
	keyring, err := os.ReadFile(filepath.Join(src.cfg.DataDir, app.KeyringFile))
	if err != nil {
		t.Fatal(err)
	}
	pgDir := sandboxtest.ShortDir(t)
	for _, d := range []string{dir, pgDir} {
		if err := os.WriteFile(filepath.Join(d, app.KeyringFile), keyring, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	onSQLite := newEnv(t, withStore(dir, "sqlite"))
	onPostgres := newEnv(t, withStore(pgDir, db))
	for _, path := range listingRequests(conv) {
		a, b := pages(onSQLite, userKey, path), pages(onPostgres, userKey, path)
		if len(a) != len(b) {
			t.Errorf("%s: %d pages on SQLite, %d on PostgreSQL", path, len(a), len(b))
			continue
		}
		for i := range a {
			// The servers' own addresses differ, and only they.
			pa := strings.ReplaceAll(a[i], onSQLite.srv.URL, "SERVER")
			pb := strings.ReplaceAll(b[i], onPostgres.srv.URL, "SERVER")
			if pa != pb {
				t.Errorf("page %d of %s differs:\nSQLite:     %s\nPostgreSQL: %s", i, path, pa, pb)
			}
		}
	}
}
