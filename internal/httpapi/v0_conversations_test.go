package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
	"github.com/agentd/agentd/internal/wire"
)

func TestV0CreateConversation(t *testing.T) {
	e := newEnv(t)
	images := []string{"https://img.example/a.png", "data:image/png;base64,iVBORw0KGgo="}
	id := e.v0Create(adminKey, map[string]any{"initial_user_msg": "Fix the bug", "image_urls": images})
	if !v0HexID.MatchString(id) {
		t.Fatalf("conversation_id %q is not 32 lowercase hex digits", id)
	}

	e.v0WaitStatus(adminKey, id, "RUNNING")
	info := e.v0Get(adminKey, id)
	if info.ConversationID != id || info.ConversationVersion != "V0" || info.Title != "Conversation "+id[:5] ||
		info.Trigger == nil || *info.Trigger != "gui" || info.RuntimeStatus == nil || *info.RuntimeStatus != "STATUS$READY" ||
		info.SessionAPIKey == nil || *info.SessionAPIKey == "" {
		t.Errorf("running conversation reads %+v", info)
	}

	sid := e.v0SandboxID(adminKey, id)
	if got := e.sandboxIDList(adminKey); !reflect.DeepEqual(got, []string{sid}) {
		t.Errorf("sandboxes %v, want the conversation's %s", got, sid)
	}
	if s := e.sandboxStatus(adminKey, sid); s != "RUNNING" {
		t.Errorf("sandbox status %q, want RUNNING", s)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, "sandboxes", "process", sid)); err != nil {
		t.Errorf("sandbox directory: %v", err)
	}

	st := e.inspectStore()
	text, gotImages := storedFirstMessage(t, st, e.userIDOf(adminKey), id)
	if text != "Fix the bug" || !reflect.DeepEqual(gotImages, images) {
		t.Errorf("first message text %q images %q, want %q and %q", text, gotImages, "Fix the bug", images)
	}
}

func TestV0CreateInitialMessage(t *testing.T) {
	e := newEnv(t)
	st := e.inspectStore()
	owner := e.userIDOf(adminKey)
	for _, tc := range []struct {
		name       string
		body       map[string]any
		wantEvent  bool
		wantText   string
		wantImages []string
	}{
		{"text only", map[string]any{"initial_user_msg": "hello"}, true, "hello", nil},
		{"images only", map[string]any{"image_urls": []string{"https://img.example/x.png"}}, true, "", []string{"https://img.example/x.png"}},
		{"text and images", map[string]any{"initial_user_msg": "look", "image_urls": []string{"https://img.example/1.png", "https://img.example/2.png"}},
			true, "look", []string{"https://img.example/1.png", "https://img.example/2.png"}},
		{"no message", map[string]any{}, false, "", nil},
		{"null message and images", map[string]any{"initial_user_msg": nil, "image_urls": nil}, false, "", nil},
		{"empty image list", map[string]any{"image_urls": []string{}}, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			id := e.v0Create(adminKey, tc.body)
			if !tc.wantEvent {
				// Its start's steps are recorded as they happen; no message is.
				for _, ev := range storedEvents(t, st, owner, id) {
					if ev.Kind == event.KindMessage {
						t.Fatalf("conversation without a message has the message %s", ev.Body)
					}
				}
				return
			}
			text, images := storedFirstMessage(t, st, owner, id)
			if text != tc.wantText || !reflect.DeepEqual(images, tc.wantImages) {
				t.Fatalf("first message text %q images %q, want %q and %q", text, images, tc.wantText, tc.wantImages)
			}
		})
	}
}

func TestV0CreateWithConversationID(t *testing.T) {
	// Start tasks need not succeed here: one running sandbox is enough.
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	for _, tc := range []struct{ name, id string }{
		{"letters digits dash underscore", "my-Conv_1"},
		{"one character", "x"},
		{"100 characters", strings.Repeat("a", 100)},
		{"32 hex digits", "0123456789abcdef0123456789abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			got := e.v0Create(adminKey, map[string]any{"conversation_id": tc.id})
			if got != tc.id {
				t.Fatalf("conversation_id %q, want %q as given", got, tc.id)
			}
			if info := e.v0Get(adminKey, tc.id); info.ConversationID != tc.id {
				t.Fatalf("GET answered conversation %q", info.ConversationID)
			}
		})
	}
}

// Conversation ids are UUIDs written as 32 hex digits, and any UUID spelling is accepted on
// input (docs/api.md, Paging): a UUID sent as conversation_id in another spelling names the
// conversation with the 32-hex form, and every spelling finds it.
func TestV0CreateWithUUIDSpelling(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	for _, tc := range []struct{ name, sent, id string }{
		{"dashed upper case", "123E4567-E89B-42D3-A456-426614174000", "123e4567e89b42d3a456426614174000"},
		{"dashed lower case", "223e4567-e89b-42d3-a456-426614174000", "223e4567e89b42d3a456426614174000"},
		{"hex upper case", "323E4567E89B42D3A456426614174000", "323e4567e89b42d3a456426614174000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			if got := e.v0Create(adminKey, map[string]any{"conversation_id": tc.sent}); got != tc.id {
				t.Errorf("conversation_id %q, want the 32-hex form %q", got, tc.id)
			}
			for _, path := range []string{tc.sent, strings.ToLower(tc.sent), tc.id, strings.ToUpper(tc.id)} {
				if info := e.v0Get(adminKey, path); info.ConversationID != tc.id {
					t.Errorf("GET %s answered conversation %q", path, info.ConversationID)
				}
			}
			status, body := e.call("POST", "/api/conversations", adminKey, map[string]any{"conversation_id": tc.id})
			if status != http.StatusConflict {
				t.Errorf("creating %s again: status %d, want 409; body %s", tc.id, status, body)
			}
		})
	}
}

func TestV0CreateExistingConversationID(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	aliceID, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.v0Create(alice, map[string]any{"conversation_id": "taken", "initial_user_msg": "alice's"})
	// Let alice's start task finish, so that nothing runs in the background below.
	e.v0WaitStatus(alice, "taken", "RUNNING")
	before := e.dbRows()

	for _, tc := range []struct{ name, key string }{
		{"same user", alice},
		{"another user", bob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/conversations", tc.key, map[string]any{"conversation_id": "taken", "initial_user_msg": "again"})
			if status != http.StatusConflict {
				t.Fatalf("status %d, want 409; body %s", status, body)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, map[string]any{"detail": "A conversation with that id already exists"}) {
				t.Errorf("body %s", body)
			}
			for _, leak := range []string{aliceID, "alice"} {
				if strings.Contains(string(body), leak) {
					t.Errorf("409 body %s reveals the owner (%q)", body, leak)
				}
			}
			checkDBUnchanged(t, before, e.dbRows())
		})
	}
	// The conversation still belongs to alice alone.
	e.must("GET", "/api/conversations/taken", alice, nil, http.StatusOK, nil)
	e.must("GET", "/api/conversations/taken", bob, nil, http.StatusNotFound, nil)
	if ids := e.v0ConversationIDs(bob); len(ids) != 0 {
		t.Errorf("bob lists %v", ids)
	}
}

func TestV0CreateAllFields(t *testing.T) {
	e := newEnv(t)
	// The conversation checks out the branch it names.
	if err := e.git.Create("octo/hello", gittest.Commit{}, gittest.Commit{Branch: "dev"}); err != nil {
		t.Fatal(err)
	}
	st := e.inspectStore()
	keyring := e.inspectKeyring()
	owner := e.userIDOf(adminKey)
	e.repo(adminKey, "github", "octo/hello")
	e.providers["github"].AddIssue(providertest.Issue{Repo: "octo/hello", Number: 7, Title: "Crash", Body: "It crashes."})
	e.repo(adminKey, "bitbucket", "octo/replay")

	// Every field at once, except replay_json, which cannot go with an initial message
	// (docs/api.md); it gets its own request below.
	all := `{"repository": "octo/hello", "git_provider": "github", "selected_branch": "dev",
		"initial_user_msg": "replaced by the task", "image_urls": ["https://img.example/a.png"],
		"suggested_task": {"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "octo/hello", "issue_number": 7, "title": "Crash"},
		"create_microagent": {"repo": "octo/other", "git_provider": "gitlab", "title": "ma"},
		"conversation_instructions": "Be brief.",
		"mcp_config": {"sse_servers": ["https://sse.example/sse", {"url": "wss://sse2.example", "api_key": "sse-key"}],
			"stdio_servers": [{"name": "fs", "command": "npx", "args": "-y \"my server\"", "env": "A=1,B=2"}],
			"shttp_servers": [{"url": "http://shttp.example/mcp", "api_key": "shttp-key", "timeout": 3600}]},
		"conversation_id": "all-fields"}`
	replay := `{"repository": "octo/replay", "git_provider": "bitbucket", "selected_branch": "main",
		"image_urls": [], "replay_json": "[{\"action\": \"message\", \"args\": {\"content\": \"hi\"}}]",
		"create_microagent": {"repo": "octo/ignored"}, "conversation_instructions": "x",
		"mcp_config": {"sse_servers": [], "stdio_servers": [], "shttp_servers": []},
		"conversation_id": "replayed"}`

	for _, tc := range []struct {
		name, body, id                  string
		repo, branch, provider, trigger string
		firstText                       string
		images                          []string
	}{
		{"all but replay", all, "all-fields", "octo/hello", "dev", "github", "suggested_task",
			`You are working on issue #7 in the repository octo/hello on GitHub: "Crash".`, []string{"https://img.example/a.png"}},
		// The replay's first message is the user's, and becomes the initial message.
		{"replay", replay, "replayed", "octo/replay", "main", "bitbucket", "microagent_management", "hi", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			id := e.v0Create(adminKey, tc.body)
			if id != tc.id {
				t.Fatalf("id %q, want %q", id, tc.id)
			}
			info := e.v0Get(adminKey, id)
			if strOf(info.SelectedRepository) != tc.repo || strOf(info.SelectedBranch) != tc.branch ||
				strOf(info.GitProvider) != tc.provider || strOf(info.Trigger) != tc.trigger {
				t.Errorf("stored repository %q branch %q provider %q trigger %q, want %q %q %q %q",
					strOf(info.SelectedRepository), strOf(info.SelectedBranch), strOf(info.GitProvider), strOf(info.Trigger),
					tc.repo, tc.branch, tc.provider, tc.trigger)
			}
			// The request is kept, sealed, as received.
			v, err := st.GetConversation(context.Background(), owner, id)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := keyring.Open(v.RequestSealed)
			if err != nil {
				t.Fatalf("open the stored request: %v", err)
			}
			if string(raw) != tc.body {
				t.Errorf("stored request %s, want the body as sent", raw)
			}

			text, images := storedFirstMessage(t, st, owner, id)
			if !strings.HasPrefix(text, tc.firstText) || !reflect.DeepEqual(images, tc.images) {
				t.Errorf("first message %q images %q, want a text starting %q and images %q", text, images, tc.firstText, tc.images)
			}
		})
	}
	for _, id := range []string{"all-fields", "replayed"} {
		e.v0WaitStatus(adminKey, id, "RUNNING")
	}
}

func TestV0CreateMicroagent(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	e.repo(adminKey, "gitlab", "octo/agents")
	e.repo(adminKey, "github", "octo/mine")
	for _, tc := range []struct {
		name           string
		body           map[string]any
		repo, provider string
	}{
		{"fills repository and provider", map[string]any{"create_microagent": map[string]any{"repo": "octo/agents", "git_provider": "gitlab"}}, "octo/agents", "gitlab"},
		{"empty repository is filled", map[string]any{"repository": "", "create_microagent": map[string]any{"repo": "octo/agents"}}, "octo/agents", ""},
		{"keeps given repository and provider", map[string]any{"repository": "octo/mine", "git_provider": "github",
			"create_microagent": map[string]any{"repo": "octo/agents", "git_provider": "gitlab"}}, "octo/mine", "github"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			info := e.v0Get(adminKey, e.v0Create(adminKey, tc.body))
			if strOf(info.SelectedRepository) != tc.repo || strOf(info.GitProvider) != tc.provider || strOf(info.Trigger) != "microagent_management" {
				t.Fatalf("repository %q provider %q trigger %q, want %q %q microagent_management",
					strOf(info.SelectedRepository), strOf(info.GitProvider), strOf(info.Trigger), tc.repo, tc.provider)
			}
		})
	}
}

func TestV0ReplayJSONExcludesFirstMessage(t *testing.T) {
	e := newEnv(t)
	before := e.dbRows()
	replay := `[{"action": "message", "args": {"content": "hi"}}]`
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"with initial_user_msg", map[string]any{"replay_json": replay, "initial_user_msg": "hi"}},
		{"with suggested_task", map[string]any{"replay_json": replay,
			"suggested_task": map[string]any{"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "a/b", "issue_number": 1, "title": "t"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/conversations", adminKey, tc.body)
			assertProblems(t, status, body, []wire.Problem{problemAt("value_error",
				"Value error, a replay brings its own first message: send replay_json without initial_user_msg or suggested_task", "body", "replay_json")})
			checkDBUnchanged(t, before, e.dbRows())
		})
	}
	if ids := e.v0ConversationIDs(adminKey); len(ids) != 0 {
		t.Errorf("conversations %v after rejected requests", ids)
	}
}

func strOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
