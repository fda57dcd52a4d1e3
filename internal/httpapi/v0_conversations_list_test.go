package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/wire"
)

func TestV0ListConversations(t *testing.T) {
	// Only the first conversation gets a running sandbox; the others' starts fail fast, which
	// does not matter to listings.
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	_, other := e.newUser("other")
	e.repo(other, "github", "octo/a")
	e.repo(adminKey, "github", "octo/a")
	e.repo(adminKey, "github", "octo/b")
	e.v0Create(other, map[string]any{"repository": "octo/a"})

	var created []string // oldest first
	for i := range 21 {
		body := map[string]any{}
		switch i % 3 {
		case 0:
			body["repository"] = "octo/a"
		case 1:
			body["repository"] = "octo/b"
			e.providers["github"].AddIssue(providertest.Issue{Repo: "octo/b", Number: i, Title: "t"})
			body["suggested_task"] = map[string]any{"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "octo/b", "issue_number": i, "title": "t"}
		}
		created = append(created, e.v0Create(adminKey, body))
	}
	newestFirst := slices.Clone(created)
	slices.Reverse(newestFirst)

	ids := func(p v0Page) []string {
		var out []string
		for _, c := range p.Results {
			out = append(out, c.ConversationID)
		}
		return out
	}

	t.Run("default limit 20 then the rest", func(t *testing.T) {
		e := e.in(t)
		var first v0Page
		e.must("GET", "/api/conversations", adminKey, nil, http.StatusOK, &first)
		if got := ids(first); !reflect.DeepEqual(got, newestFirst[:20]) {
			t.Fatalf("first page %v, want the 20 newest %v", got, newestFirst[:20])
		}
		if first.NextPageID == nil {
			t.Fatal("next_page_id is null with one conversation left")
		}
		var second v0Page
		e.must("GET", "/api/conversations?page_id="+*first.NextPageID, adminKey, nil, http.StatusOK, &second)
		if got := ids(second); !reflect.DeepEqual(got, newestFirst[20:]) || second.NextPageID != nil {
			t.Fatalf("second page %v next %v, want %v and null", got, second.NextPageID, newestFirst[20:])
		}
	})

	t.Run("keys", func(t *testing.T) {
		e := e.in(t)
		var raw map[string]any
		e.must("GET", "/api/conversations?limit=1", adminKey, nil, http.StatusOK, &raw)
		if len(raw) != 2 || raw["results"] == nil {
			t.Fatalf("page %v, want exactly results and next_page_id", raw)
		}
		if _, ok := raw["next_page_id"]; !ok {
			t.Fatalf("page %v lacks next_page_id", raw)
		}
	})

	t.Run("limit bounds", func(t *testing.T) {
		e := e.in(t)
		for _, limit := range []string{"1", "100"} {
			var p v0Page
			e.must("GET", "/api/conversations?limit="+limit, adminKey, nil, http.StatusOK, &p)
			want := newestFirst[:min(len(newestFirst), map[string]int{"1": 1, "100": 100}[limit])]
			if got := ids(p); !reflect.DeepEqual(got, want) {
				t.Errorf("limit=%s: %v, want %v", limit, got, want)
			}
		}
		for _, tc := range []struct {
			limit string
			want  wire.Problem
		}{
			{"0", problemAt("greater_than_equal", "Input should be greater than or equal to 1", "query", "limit")},
			{"-1", problemAt("greater_than_equal", "Input should be greater than or equal to 1", "query", "limit")},
			{"101", problemAt("less_than_equal", "Input should be less than or equal to 100", "query", "limit")},
			{"ten", problemAt("int_parsing", "Input should be a valid integer, unable to parse string as an integer", "query", "limit")},
		} {
			status, body := e.call("GET", "/api/conversations?limit="+tc.limit, adminKey, nil)
			assertProblems(t, status, body, []wire.Problem{tc.want})
		}
	})

	t.Run("filters", func(t *testing.T) {
		e := e.in(t)
		pick := func(keep func(i int) bool) []string {
			var out []string
			for i := len(created) - 1; i >= 0; i-- {
				if keep(i) {
					out = append(out, created[i])
				}
			}
			return out
		}
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"selected_repository=octo/a", pick(func(i int) bool { return i%3 == 0 })},
			{"selected_repository=octo/b", pick(func(i int) bool { return i%3 == 1 })},
			{"selected_repository=octo/none", nil},
			{"conversation_trigger=suggested_task", pick(func(i int) bool { return i%3 == 1 })},
			{"conversation_trigger=gui", pick(func(i int) bool { return i%3 != 1 })},
			{"conversation_trigger=gui&selected_repository=octo/a", pick(func(i int) bool { return i%3 == 0 })},
			{"conversation_trigger=slack", nil},
		} {
			var p v0Page
			e.must("GET", "/api/conversations?limit=100&"+tc.query, adminKey, nil, http.StatusOK, &p)
			if got := ids(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
			}
		}
		status, body := e.call("GET", "/api/conversations?conversation_trigger=bogus", adminKey, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"loc":["query","conversation_trigger"]`) {
			t.Errorf("bad trigger: status %d body %s, want 422 at [query conversation_trigger]", status, body)
		}
	})

	t.Run("bad page id", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("GET", "/api/conversations?page_id=not-a-token", adminKey, nil)
		assertProblems(t, status, body, []wire.Problem{problemAt("value_error",
			"Value error, invalid page_id: pass back a next_page_id this server returned", "query", "page_id")})
	})

	t.Run("only the caller's", func(t *testing.T) {
		e := e.in(t)
		got := e.v0ConversationIDs(other)
		if len(got) != 1 || slices.Contains(created, got[0]) {
			t.Fatalf("other user lists %v, want only its own conversation", got)
		}
	})
}

func TestV0GetConversation(t *testing.T) {
	e := newEnv(t)
	_, other := e.newUser("other")
	e.repo(adminKey, "gitlab", "octo/x")
	id := e.v0Create(adminKey, map[string]any{"repository": "octo/x", "selected_branch": "main", "git_provider": "gitlab"})
	info := e.v0Get(adminKey, id)
	if info.ConversationID != id || strOf(info.SelectedRepository) != "octo/x" || strOf(info.SelectedBranch) != "main" ||
		strOf(info.GitProvider) != "gitlab" || strOf(info.Trigger) != "gui" || info.PRNumber == nil || info.SubConversationIDs == nil {
		t.Errorf("GET answered %+v", info)
	}
	e.v0WaitStatus(adminKey, id, "RUNNING")

	for _, tc := range []struct {
		name, path, key string
		status          int
		detail          string
	}{
		{"unknown", "0123456789abcdef0123456789abcdef", adminKey, http.StatusNotFound, "Conversation not found"},
		{"another user's", id, other, http.StatusNotFound, "Conversation not found"},
		{"too long", strings.Repeat("a", 101), adminKey, http.StatusBadRequest, "Conversation ID is too long"},
		{"100 characters is not too long", strings.Repeat("a", 100), adminKey, http.StatusNotFound, "Conversation not found"},
		{"NUL", "a%00b", adminKey, http.StatusBadRequest, "Conversation ID contains invalid characters"},
		{"dot dot", "a..b", adminKey, http.StatusBadRequest, "Conversation ID contains invalid path characters"},
		{"escaped slash", "a%2Fb", adminKey, http.StatusBadRequest, "Conversation ID contains invalid path characters"},
		{"backslash", `a%5Cb`, adminKey, http.StatusBadRequest, "Conversation ID contains invalid path characters"},
		{"control character", "a%01b", adminKey, http.StatusBadRequest, "Conversation ID contains control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			for _, method := range []string{"GET", "DELETE"} {
				status, body := e.call(method, "/api/conversations/"+tc.path, tc.key, nil)
				if status != tc.status || string(body) != `{"detail":"`+tc.detail+`"}`+"\n" {
					t.Errorf("%s: status %d body %s, want %d {\"detail\":%q}", method, status, body, tc.status, tc.detail)
				}
			}
		})
	}
	// The DELETEs above removed nothing.
	e.v0WaitStatus(adminKey, id, "RUNNING")
}

func TestV0DeleteConversation(t *testing.T) {
	e := newEnv(t)
	_, other := e.newUser("other")
	id := e.v0Create(adminKey, map[string]any{"initial_user_msg": "bye"})
	keep := e.v0Create(adminKey, map[string]any{})
	e.v0WaitStatus(adminKey, id, "RUNNING")
	e.v0WaitStatus(adminKey, keep, "RUNNING")
	sid := e.v0SandboxID(adminKey, id)
	keepSID := e.v0SandboxID(adminKey, keep)
	dir := filepath.Join(e.cfg.DataDir, "sandboxes", "process", sid)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("sandbox directory before delete: %v", err)
	}

	t.Run("another user's", func(t *testing.T) {
		e := e.in(t)
		before := e.dbRows()
		status, body := e.call("DELETE", "/api/conversations/"+id, other, nil)
		if status != http.StatusNotFound || string(body) != `{"detail":"Conversation not found"}`+"\n" {
			t.Fatalf("status %d body %s, want 404", status, body)
		}
		checkDBUnchanged(t, before, e.dbRows())
		if s := e.sandboxStatus(adminKey, sid); s != "RUNNING" {
			t.Errorf("sandbox %s after another user's delete: %q", sid, s)
		}
	})

	t.Run("owner", func(t *testing.T) {
		e := e.in(t)
		var ok bool
		e.must("DELETE", "/api/conversations/"+id, adminKey, nil, http.StatusOK, &ok)
		if !ok {
			t.Fatal("DELETE answered false")
		}
		e.must("GET", "/api/conversations/"+id, adminKey, nil, http.StatusNotFound, nil)
		if ids := e.v0ConversationIDs(adminKey); !reflect.DeepEqual(ids, []string{keep}) {
			t.Errorf("conversations after delete %v, want only %s", ids, keep)
		}
		if ids := e.sandboxIDList(adminKey); !reflect.DeepEqual(ids, []string{keepSID}) {
			t.Errorf("sandboxes after delete %v, want only %s", ids, keepSID)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("sandbox directory %s after delete: %v, want it gone", dir, err)
		}
		if evs := storedEvents(t, e.inspectStore(), e.userIDOf(adminKey), id); len(evs) != 0 {
			t.Errorf("events left after delete: %d", len(evs))
		}
		e.must("DELETE", "/api/conversations/"+id, adminKey, nil, http.StatusNotFound, nil)
	})

	if s := e.sandboxStatus(adminKey, keepSID); s != "RUNNING" {
		t.Errorf("the other conversation's sandbox is %q", s)
	}
}

func TestV0ConversationStatusFollowsSandbox(t *testing.T) {
	e := newEnv(t)
	id := e.v0Create(adminKey, map[string]any{"initial_user_msg": "hi"})
	// The answer said STARTING; the conversation reads STARTING until its sandbox runs.
	if s := e.v0Get(adminKey, id).Status; s != "STARTING" && s != "RUNNING" {
		t.Fatalf("new conversation reads %q", s)
	}
	e.v0WaitStatus(adminKey, id, "RUNNING")
	sid := e.v0SandboxID(adminKey, id)

	e.must("POST", "/api/v1/sandboxes/"+sid+"/pause", adminKey, nil, http.StatusOK, nil)
	if info := e.v0Get(adminKey, id); info.Status != "STOPPED" || info.RuntimeStatus != nil || info.SessionAPIKey != nil {
		t.Errorf("after pause: status %q runtime_status %v session key set %v, want STOPPED, null, null",
			info.Status, info.RuntimeStatus, info.SessionAPIKey != nil)
	}
	e.must("POST", "/api/v1/sandboxes/"+sid+"/resume", adminKey, nil, http.StatusOK, nil)
	if info := e.v0Get(adminKey, id); info.Status != "RUNNING" || info.SessionAPIKey == nil {
		t.Errorf("after resume: status %q, session key set %v, want RUNNING with a key", info.Status, info.SessionAPIKey != nil)
	}
	e.must("DELETE", "/api/v1/sandboxes/"+sid, adminKey, nil, http.StatusOK, nil)
	if s := e.v0Get(adminKey, id).Status; s != "STOPPED" {
		t.Errorf("after its sandbox was deleted: %q, want STOPPED", s)
	}
}
