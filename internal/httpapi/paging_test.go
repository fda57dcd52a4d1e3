package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// pagedItem is what the paging checks need of any listed item.
type pagedItem struct {
	ID        string
	CreatedAt time.Time
}

// pageThrough fetches every page of a listing with limit and returns the items in order. It
// fails unless every page but the last is full, the last has no next_page_id, and (when
// between is not nil) it calls between after the first page.
func pageThrough(t *testing.T, limit int, fetch func(pageID string) ([]pagedItem, *string), between func()) []pagedItem {
	t.Helper()
	var all []pagedItem
	pageID := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		items, next := fetch(pageID)
		all = append(all, items...)
		if next == nil {
			if len(items) > limit {
				t.Fatalf("last page has %d items, more than the limit %d", len(items), limit)
			}
			return all
		}
		if len(items) != limit {
			t.Fatalf("page %d has %d items and a next page, want %d", pages, len(items), limit)
		}
		if *next == "" {
			t.Fatal("next_page_id is an empty string, want null or a token")
		}
		pageID = *next
		if pages == 0 && between != nil {
			between()
		}
	}
}

// checkNewestFirst fails unless got holds exactly the ids of want, each once, ordered by
// created_at then id, both descending.
func checkNewestFirst(t *testing.T, got []pagedItem, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for i, it := range got {
		if seen[it.ID] {
			t.Fatalf("item %s repeats (position %d)", it.ID, i)
		}
		seen[it.ID] = true
		if i > 0 {
			prev := got[i-1]
			if c := it.CreatedAt.Compare(prev.CreatedAt); c > 0 || (c == 0 && it.ID > prev.ID) {
				t.Fatalf("item %d (%s, %v) comes after %s (%v): not newest first", i, it.ID, it.CreatedAt, prev.ID, prev.CreatedAt)
			}
		}
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("item %s is missing from the pages", id)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("pages hold %d items, want %d", len(got), len(want))
	}
}

func TestConversationPaging(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(key)

	const total = 250
	var ids, taskIDs []string
	for i := range total {
		task := e.startConversation(key, map[string]any{"sandbox_id": sb, "title": fmt.Sprintf("conversation %03d", i)})
		taskIDs = append(taskIDs, task.ID)
	}
	for chunk := range slices.Chunk(taskIDs, 100) {
		e.eventually("start tasks READY", func() bool {
			var tasks []*v1Task
			e.must("GET", "/api/v1/app-conversations/start-tasks?"+idsQuery("ids", chunk), key, nil, http.StatusOK, &tasks)
			for _, task := range tasks {
				if task == nil || task.Status != "READY" {
					return false
				}
			}
			return true
		})
	}
	var tasks []*v1Task
	for chunk := range slices.Chunk(taskIDs, 100) {
		var part []*v1Task
		e.must("GET", "/api/v1/app-conversations/start-tasks?"+idsQuery("ids", chunk), key, nil, http.StatusOK, &part)
		tasks = append(tasks, part...)
	}
	for _, task := range tasks {
		ids = append(ids, *task.AppConversationID)
	}
	e.newConversation(bob, map[string]any{"title": "bob's"}) // never in alice's pages

	v1 := func(limit int) func(string) ([]pagedItem, *string) {
		return func(pageID string) ([]pagedItem, *string) {
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if pageID != "" {
				q.Set("page_id", pageID)
			}
			var page v1ConvPage
			e.must("GET", "/api/v1/app-conversations/search?"+q.Encode(), key, nil, http.StatusOK, &page)
			var items []pagedItem
			for _, c := range page.Items {
				items = append(items, pagedItem{c.ID, c.CreatedAt})
			}
			return items, page.NextPageID
		}
	}
	v0 := func(limit int) func(string) ([]pagedItem, *string) {
		return func(pageID string) ([]pagedItem, *string) {
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if pageID != "" {
				q.Set("page_id", pageID)
			}
			var page struct {
				Results []struct {
					ConversationID string    `json:"conversation_id"`
					CreatedAt      time.Time `json:"created_at"`
				} `json:"results"`
				NextPageID *string `json:"next_page_id"`
			}
			e.must("GET", "/api/conversations?"+q.Encode(), key, nil, http.StatusOK, &page)
			var items []pagedItem
			for _, c := range page.Results {
				items = append(items, pagedItem{c.ConversationID, c.CreatedAt})
			}
			return items, page.NextPageID
		}
	}

	for _, tc := range []struct {
		name  string
		limit int
		fetch func(int) func(string) ([]pagedItem, *string)
	}{
		{"V1 limit 100", 100, v1},
		{"V1 limit 7", 7, v1},
		{"V1 limit 1", 1, v1},
		{"V0 limit 100", 100, v0},
		{"V0 limit 7", 7, v0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNewestFirst(t, pageThrough(t, tc.limit, tc.fetch(tc.limit), nil), ids)
		})
	}

	t.Run("default limits", func(t *testing.T) {
		e := e.in(t)
		var page v1ConvPage
		e.must("GET", "/api/v1/app-conversations/search", key, nil, http.StatusOK, &page)
		if len(page.Items) != 100 || page.NextPageID == nil {
			t.Fatalf("V1 first page has %d items, want 100 and a next page", len(page.Items))
		}
		var v0page struct {
			Results    []any   `json:"results"`
			NextPageID *string `json:"next_page_id"`
		}
		e.must("GET", "/api/conversations", key, nil, http.StatusOK, &v0page)
		if len(v0page.Results) != 20 || v0page.NextPageID == nil {
			t.Fatalf("V0 first page has %d items, want 20 and a next page", len(v0page.Results))
		}
	})

	t.Run("a conversation created while paging", func(t *testing.T) {
		e := e.in(t)
		var added string
		got := pageThrough(t, 7, v1(7), func() {
			_, c := e.newConversation(key, map[string]any{"sandbox_id": sb, "title": "late"})
			added = c.ID
		})
		// The new conversation is newer than the first page, so it is not on the later ones.
		checkNewestFirst(t, got, ids)
		if slices.ContainsFunc(got, func(it pagedItem) bool { return it.ID == added }) {
			t.Fatal("the conversation created after the first page showed up on a later page")
		}
		ids = append(ids, added)
	})

	t.Run("a page id from another listing", func(t *testing.T) {
		e := e.in(t)
		_, next := v1(7)("")
		var page v1ConvPage
		// A token is a position, not a secret: bob's listing from alice's position is empty,
		// not alice's conversations.
		e.must("GET", "/api/v1/app-conversations/search?page_id="+url.QueryEscape(*next), bob, nil, http.StatusOK, &page)
		for _, c := range page.Items {
			if slices.Contains(ids, c.ID) {
				t.Fatalf("bob's page shows alice's conversation %s", c.ID)
			}
		}
	})

	t.Run("count", func(t *testing.T) {
		e := e.in(t)
		var n int
		e.must("GET", "/api/v1/app-conversations/count", key, nil, http.StatusOK, &n)
		if n != len(ids) {
			t.Fatalf("count %d, want %d", n, len(ids))
		}
	})
}

func TestSandboxPaging(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("alice")
	_, bob := e.newUser("bob")
	var ids []string
	for range 5 {
		ids = append(ids, e.startSandbox(key))
	}
	e.startSandbox(bob)
	for _, id := range ids {
		e.waitSandbox(key, id, "RUNNING")
	}
	fetch := func(pageID string) ([]pagedItem, *string) {
		q := url.Values{"limit": {"2"}}
		if pageID != "" {
			q.Set("page_id", pageID)
		}
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search?"+q.Encode(), key, nil, http.StatusOK, &page)
		var items []pagedItem
		for _, sb := range page.Items {
			created, err := time.Parse(time.RFC3339Nano, sb.CreatedAt)
			if err != nil {
				t.Fatalf("created_at %q: %v", sb.CreatedAt, err)
			}
			items = append(items, pagedItem{sb.ID, created})
		}
		return items, page.NextPageID
	}
	got := pageThrough(t, 2, fetch, nil)
	checkNewestFirst(t, got, ids)
	if len(got) != 5 {
		t.Fatalf("%d sandboxes over the pages, want 5", len(got))
	}
}
