package httpapi_test

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// writeWorkspace writes files into a running sandbox's workspace through its runtime, named
// relative to the workspace.
func (e *env) writeWorkspace(key, sandboxID string, files map[string]string) {
	e.t.Helper()
	var script strings.Builder
	for name, content := range files {
		script.WriteString("mkdir -p \"$(dirname '" + name + "')\" && cat > '" + name + "' <<'AGENTD_EOF'\n" + content + "\nAGENTD_EOF\n")
	}
	e.run(key, sandboxID, script.String())
}

// writeProject writes files in the directory where the sandbox's current-generation
// conversations work, named relative to it.
func (e *env) writeProject(key, sandboxID string, files map[string]string) {
	e.t.Helper()
	in := make(map[string]string, len(files))
	for name, content := range files {
		in[path.Join(conversation.ProjectDir, name)] = content
	}
	e.writeWorkspace(key, sandboxID, in)
}

// TestSkillsReachTheAgent is the story of skills through the public API: the workspace holds
// AGENTS.md, a knowledge microagent and a broken one, and the user keeps two skills of their
// own. The always-on ones are in the system message of the first model call; the broken file
// is a warning event; the knowledge skill joins the system message only after the user's
// message with its trigger, once, also after a restart.
func TestSkillsReachTheAgent(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("Hello."), llmtest.Text("Deploying."), llmtest.Text("Again."), llmtest.Text("After the restart."))
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "mine", "content": "USER-ALWAYS: answer briefly."}, http.StatusCreated, nil)
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "kube", "content": "USER-KUBE: use the staging cluster.",
		"triggers": []string{"kubernetes"}}, http.StatusCreated, nil)

	sb := e.runningSandbox(alice)
	e.writeProject(alice, sb, map[string]string{
		"AGENTS.md": "REPO-GUIDANCE: run make check before you finish.",
		".openhands/microagents/deploy.md": "---\nname: deploy\ntriggers:\n  - deploy\n---\n" +
			"KNOWLEDGE-DEPLOY: deploy with make deploy ENV=staging.",
		".openhands/microagents/broken.md": "---\ntriggers: [oops\n---\nnever loaded",
	})
	c := e.startAgent(alice, map[string]any{"sandbox_id": sb, "initial_message": message("Hello, how is the deployment going?", true)})
	c.waitStatus("finished")

	count := func(call int, what string) int {
		t.Helper()
		reqs := srv.Requests()
		if len(reqs) <= call {
			t.Fatalf("%d model calls, want more than %d", len(reqs), call)
		}
		n := strings.Count(reqs[call].System, what)
		for _, m := range reqs[call].Messages {
			n += strings.Count(m.Text(), what)
		}
		return n
	}
	for _, want := range []string{"REPO-GUIDANCE", "USER-ALWAYS"} {
		if n := count(0, want); n != 1 {
			t.Errorf("first call: %s occurs %d times, want 1", want, n)
		}
	}
	for _, absent := range []string{"KNOWLEDGE-DEPLOY", "USER-KUBE", "never loaded"} {
		if n := count(0, absent); n != 0 {
			t.Errorf("first call: %s occurs %d times before its trigger", absent, n)
		}
	}

	var warnings []string
	for _, ev := range c.events() {
		if ev.Kind == "SkillWarningEvent" {
			warnings = append(warnings, string(c.api("GET", "/events/"+ev.ID, nil, http.StatusOK, nil)))
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"path":".openhands/microagents/broken.md"`) ||
		!strings.Contains(warnings[0], "frontmatter") {
		t.Fatalf("warning events %v", warnings)
	}

	c.api("POST", "/events", message("Please Deploy it now.", true), http.StatusOK, nil)
	c.waitCalls(srv, 2)
	c.waitStatus("finished")
	if n := count(1, "KNOWLEDGE-DEPLOY"); n != 1 {
		t.Errorf("after the trigger: the knowledge skill occurs %d times, want 1", n)
	}
	c.api("POST", "/events", message("deploy once more", true), http.StatusOK, nil)
	c.waitCalls(srv, 3)
	c.waitStatus("finished")
	if n := count(2, "KNOWLEDGE-DEPLOY"); n != 1 {
		t.Errorf("after a second trigger: the knowledge skill occurs %d times, want 1", n)
	}

	e.restart()
	c.api("POST", "/events", message("and deploy after the restart", true), http.StatusOK, nil)
	c.waitCalls(srv, 4)
	c.waitStatus("finished")
	if n := count(3, "KNOWLEDGE-DEPLOY"); n != 1 {
		t.Errorf("after a restart: the knowledge skill occurs %d times, want 1", n)
	}
	if n := count(3, "REPO-GUIDANCE"); n != 1 {
		t.Errorf("after a restart: the repo skill occurs %d times, want 1", n)
	}
	var activations []string
	for _, ev := range c.events() {
		if ev.Kind == "ConversationStateUpdateEvent" && ev.Key == "activated_knowledge_skills" {
			activations = append(activations, string(ev.Value))
		}
	}
	if !slices.Equal(activations, []string{`["deploy"]`}) {
		t.Errorf("activations recorded: %v", activations)
	}
}

// waitCalls waits until the scripted model has answered n calls.
func (c *agentConv) waitCalls(srv *llmtest.Server, n int) {
	c.e.t.Helper()
	c.e.eventually("model call", func() bool { return len(srv.Requests()) >= n },
		func() string { return fmt.Sprintf("%d calls, want %d", len(srv.Requests()), n) })
}

type skillJSON struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Triggers    []string `json:"triggers"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// TestUserSkillRoutes: create, read, list (paged), replace and delete one's own skills; bad
// input is a 422 that says what is wrong; nobody sees another user's skills.
func TestUserSkillRoutes(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")

	var created skillJSON
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "deploy", "content": "Use make deploy.",
		"triggers": []string{" deploy ", "Deploy", "ship"}, "description": "How to deploy"}, http.StatusCreated, &created)
	if created.Name != "deploy" || created.Type != "knowledge" || !slices.Equal(created.Triggers, []string{"deploy", "ship"}) ||
		created.Description != "How to deploy" || created.CreatedAt == "" {
		t.Fatalf("created %+v", created)
	}
	var style skillJSON
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "style", "content": "Tabs."}, http.StatusCreated, &style)
	if style.Type != "repo" || style.Triggers == nil || len(style.Triggers) != 0 {
		t.Fatalf("an always-on skill: %+v", style)
	}
	status, body := e.call("POST", "/api/v1/skills", alice, map[string]any{"name": "deploy", "content": "again"})
	if status != http.StatusConflict || !strings.Contains(string(body), "exists") {
		t.Fatalf("duplicate name: %d %s", status, body)
	}

	for _, bad := range []struct {
		body map[string]any
		loc  string
	}{
		{map[string]any{"name": "Bad Name", "content": "x"}, `"name"`},
		{map[string]any{"name": "../x", "content": "x"}, `"name"`},
		{map[string]any{"name": "ok", "content": "  \n"}, `"content"`},
		{map[string]any{"name": "ok"}, `"content"`},
		{map[string]any{"content": "x"}, `"name"`},
		{map[string]any{"name": "ok", "content": "x", "triggers": []string{"a", " "}}, `"triggers",1`},
		{map[string]any{"name": "ok", "content": "x", "triggers": "deploy"}, `"triggers"`},
		{map[string]any{"name": "ok", "content": "x", "color": "red"}, `"color"`},
		{map[string]any{"name": strings.Repeat("n", 65), "content": "x"}, `"name"`},
	} {
		status, body := e.call("POST", "/api/v1/skills", alice, bad.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), bad.loc) {
			t.Errorf("%v: %d %s, want 422 at %s", bad.body, status, body, bad.loc)
		}
	}

	var got skillJSON
	e.must("GET", "/api/v1/skills/deploy", alice, nil, http.StatusOK, &got)
	if got.Content != "Use make deploy." {
		t.Fatalf("get %+v", got)
	}
	e.must("GET", "/api/v1/skills/deploy", bob, nil, http.StatusNotFound, nil)
	e.must("GET", "/api/v1/skills/missing", alice, nil, http.StatusNotFound, nil)
	e.must("GET", "/api/v1/skills/deploy", "", nil, http.StatusUnauthorized, nil)

	var page struct {
		Items      []skillJSON `json:"items"`
		NextPageID *string     `json:"next_page_id"`
	}
	e.must("GET", "/api/v1/skills/search?limit=1", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Name != "deploy" || page.NextPageID == nil {
		t.Fatalf("first page %+v", page)
	}
	e.must("GET", "/api/v1/skills/search?limit=1&page_id="+*page.NextPageID, alice, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Name != "style" || page.NextPageID != nil {
		t.Fatalf("second page %+v", page)
	}
	e.must("GET", "/api/v1/skills/search", bob, nil, http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Fatalf("bob sees %+v", page.Items)
	}
	e.must("GET", "/api/v1/skills/search?page_id=nonsense", alice, nil, http.StatusUnprocessableEntity, nil)

	var updated skillJSON
	e.must("PUT", "/api/v1/skills/deploy", alice, map[string]any{"content": "Use make release."}, http.StatusOK, &updated)
	if updated.Content != "Use make release." || updated.Type != "repo" || len(updated.Triggers) != 0 ||
		updated.Description != "" || updated.CreatedAt != created.CreatedAt {
		t.Fatalf("updated %+v", updated)
	}
	e.must("PUT", "/api/v1/skills/deploy", bob, map[string]any{"content": "mine now"}, http.StatusNotFound, nil)
	e.must("PUT", "/api/v1/skills/deploy", alice, map[string]any{"content": ""}, http.StatusUnprocessableEntity, nil)
	e.must("PUT", "/api/v1/skills/missing", alice, map[string]any{"content": "x"}, http.StatusNotFound, nil)

	e.must("DELETE", "/api/v1/skills/deploy", bob, nil, http.StatusNotFound, nil)
	e.must("DELETE", "/api/v1/skills/deploy", alice, nil, http.StatusOK, nil)
	e.must("DELETE", "/api/v1/skills/deploy", alice, nil, http.StatusNotFound, nil)
	e.must("GET", "/api/v1/skills/deploy", alice, nil, http.StatusNotFound, nil)
}

// TestMicroagentManagement: a V0 conversation created with create_microagent gets the
// microagent_management trigger, the repository and a first message that asks for the
// microagent; the listing shows such conversations of that repository only.
func TestMicroagentManagement(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.scripted(alice, llmtest.Text("On it."), llmtest.Text("On it."), llmtest.Text("On it."))
	e.repo(alice, "github", "acme/api")
	e.repo(alice, "github", "acme/web")

	mine := e.v0Create(alice, map[string]any{"create_microagent": map[string]any{"repo": "acme/api", "git_provider": "github", "title": "running the tests"}})
	custom := e.v0Create(alice, map[string]any{"initial_user_msg": "My own instructions.",
		"create_microagent": map[string]any{"repo": "acme/api"}})
	other := e.v0Create(alice, map[string]any{"create_microagent": map[string]any{"repo": "acme/web"}})
	plain := e.v0Create(alice, map[string]any{"repository": "acme/api", "initial_user_msg": "fix it"})

	list := func(key, repo string) []string {
		t.Helper()
		var rs struct {
			Results []struct {
				ConversationID     string `json:"conversation_id"`
				Trigger            string `json:"trigger"`
				SelectedRepository string `json:"selected_repository"`
				GitProvider        string `json:"git_provider"`
			} `json:"results"`
			NextPageID *string `json:"next_page_id"`
		}
		e.must("GET", "/api/microagent-management/conversations?selected_repository="+repo, key, nil, http.StatusOK, &rs)
		var ids []string
		for _, r := range rs.Results {
			if r.Trigger != "microagent_management" || r.SelectedRepository != repo {
				t.Errorf("listed %+v", r)
			}
			ids = append(ids, r.ConversationID)
		}
		return ids
	}
	if got := list(alice, "acme/api"); !slices.Equal(got, []string{custom, mine}) {
		t.Errorf("acme/api: %v, want %v (not %s)", got, []string{custom, mine}, plain)
	}
	if got := list(alice, "acme/web"); !slices.Equal(got, []string{other}) {
		t.Errorf("acme/web: %v", got)
	}
	if got := list(bob, "acme/api"); len(got) != 0 {
		t.Errorf("bob sees %v", got)
	}
	if info := e.v0Get(alice, mine); info.GitProvider == nil || *info.GitProvider != "github" {
		t.Errorf("git_provider of the microagent conversation: %+v", info)
	}
	status, body := e.call("GET", "/api/microagent-management/conversations", alice, nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "selected_repository") {
		t.Errorf("without selected_repository: %d %s", status, body)
	}

	first := func(convID string) string {
		t.Helper()
		var page struct {
			Items []wireEvent `json:"items"`
		}
		e.must("GET", "/api/v1/events/search?kind__eq=MessageEvent&conversation_id__eq="+convID, alice, nil, http.StatusOK, &page)
		for _, ev := range page.Items {
			if ev.Source == "user" && len(ev.LLMMessage.Content) > 0 {
				return ev.LLMMessage.Content[0].Text
			}
		}
		t.Fatalf("no user message in %s", convID)
		return ""
	}
	if msg := first(mine); !strings.Contains(msg, "Write a microagent for the repository acme/api about \"running the tests\"") ||
		!strings.Contains(msg, ".openhands/microagents/") || !strings.Contains(msg, "triggers") {
		t.Errorf("first message of the microagent conversation: %q", msg)
	}
	if msg := first(custom); msg != "My own instructions." {
		t.Errorf("a client's own first message was replaced: %q", msg)
	}
}
