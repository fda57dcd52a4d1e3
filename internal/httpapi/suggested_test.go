package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/wire"
)

// TestSuggestedTaskV0 creates conversations on suggested tasks of each provider and kind: the
// first message is agentd's task in the provider's words, holding the issue or pull request
// as the double has it, and points the agent at the provider tools, never at a token.
func TestSuggestedTaskV0(t *testing.T) {
	e := newEnv(t)
	st := e.inspectStore()
	_, key := e.newUser("tasks")
	owner := e.userIDOf(key)
	for _, p := range []string{"github", "gitlab", "bitbucket"} {
		login := "dev-" + p
		e.storeToken(key, p, login)
		e.providers[p].AddRepo(providertest.Repo{FullName: "acme/" + p, Private: true, Members: []string{login}})
	}
	gh, gl, bb := e.providers["github"], e.providers["gitlab"], e.providers["bitbucket"]
	issue := gh.AddIssue(providertest.Issue{Repo: "acme/github", Title: "Login fails with SSO", Body: "Signing in through SSO loops back to the login page.",
		Author: "reporter", Comments: []providertest.Comment{{Author: "maintainer", Body: "Reproduced with Okta."}}})
	mr := gl.AddPullRequest(providertest.PullRequest{Repo: "acme/gitlab", Title: "Speed up the build", Body: "Caches the modules.",
		Author: "dev-gitlab", Head: "cache", Base: "main", Checks: []providertest.Check{{Name: "unit-tests", State: "failure"}, {Name: "lint", State: "success"}}})
	pr := bb.AddPullRequest(providertest.PullRequest{Repo: "acme/bitbucket", Title: "New parser", Author: "dev-bitbucket", Head: "parser", Base: "main",
		Comments: []providertest.Comment{{Author: "reviewer", Body: "Handle the empty input.", Path: "parse.go", Line: 7}}})
	bbIssue := bb.AddIssue(providertest.Issue{Repo: "acme/bitbucket", Title: "Docs are stale", Body: "The README names an old flag."})

	for _, tc := range []struct {
		name string
		body map[string]any
		repo string
		want []string
	}{
		{"github issue", map[string]any{"suggested_task": map[string]any{"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "acme/github", "issue_number": issue, "title": "t"}},
			"acme/github", []string{fmt.Sprintf("issue #%d in the repository acme/github on GitHub", issue), `"Login fails with SSO"`,
				"Signing in through SSO loops back to the login page.", "Reproduced with Okta.", "read_issue", "create_pull_request", fmt.Sprintf("Closes #%d", issue)}},
		{"gitlab failing checks", map[string]any{"repository": "acme/gitlab", "initial_user_msg": "replaced",
			"suggested_task": map[string]any{"git_provider": "gitlab", "task_type": "FAILING_CHECKS", "repo": "acme/gitlab", "issue_number": mr, "title": "t"}},
			"acme/gitlab", []string{fmt.Sprintf("merge request !%d", mr), "GitLab CI/CD pipelines", "unit-tests: failure", "Caches the modules.",
				"read_merge_request", "the branch cache"}},
		{"bitbucket unresolved comments", map[string]any{"suggested_task": map[string]any{"git_provider": "bitbucket", "task_type": "UNRESOLVED_COMMENTS", "repo": "acme/bitbucket", "issue_number": pr, "title": "t"}},
			"acme/bitbucket", []string{fmt.Sprintf("pull request #%d", pr), "not addressed", "parse.go:7", "Handle the empty input.", "read_pull_request"}},
		// Neither task_type nor a provider: an issue, at the provider whose token reaches the repository.
		{"no type, no provider", map[string]any{"suggested_task": map[string]any{"repo": "acme/bitbucket", "issue_number": bbIssue, "title": "t"}},
			"acme/bitbucket", []string{fmt.Sprintf("issue #%d", bbIssue), "on Bitbucket", "The README names an old flag.", "create_pull_request"}},
		{"open pull request", map[string]any{"suggested_task": map[string]any{"git_provider": "gitlab", "task_type": "OPEN_PR", "repo": "acme/gitlab", "issue_number": mr, "title": "t"}},
			"acme/gitlab", []string{fmt.Sprintf("merge request !%d", mr), "Take it forward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			id := e.v0Create(key, tc.body)
			info := e.v0Get(key, id)
			if strOf(info.Trigger) != "suggested_task" || strOf(info.SelectedRepository) != tc.repo {
				t.Errorf("trigger %q repository %q, want suggested_task on %s", strOf(info.Trigger), strOf(info.SelectedRepository), tc.repo)
			}
			text, _ := storedFirstMessage(t, st, owner, id)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the first message lacks %q:\n%s", w, text)
				}
			}
			for _, not := range []string{"_TOKEN", "$", "replaced"} {
				if strings.Contains(text, not) {
					t.Errorf("the first message holds %q:\n%s", not, text)
				}
			}
		})
	}

	e.v0Settle(key)
	before := e.dbRows()
	for _, tc := range []struct {
		name   string
		task   map[string]any
		extra  map[string]any
		status int
		msg    string
		loc    []any
	}{
		{"missing issue", map[string]any{"git_provider": "github", "repo": "acme/github", "issue_number": 999, "title": "t"}, nil,
			http.StatusUnprocessableEntity, "Value error, issue #999 was not found in acme/github at GitHub", []any{"body", "suggested_task"}},
		{"missing merge request", map[string]any{"git_provider": "gitlab", "task_type": "MERGE_CONFLICTS", "repo": "acme/gitlab", "issue_number": 999, "title": "t"}, nil,
			http.StatusUnprocessableEntity, "Value error, merge request !999 was not found in acme/gitlab at GitLab", []any{"body", "suggested_task"}},
		{"another repository", map[string]any{"git_provider": "github", "repo": "acme/other", "issue_number": 1, "title": "t"}, map[string]any{"repository": "acme/github"},
			http.StatusUnprocessableEntity, "Value error, suggested_task.repo must be the conversation's repository (acme/github)", []any{"body", "suggested_task", "repo"}},
		{"no prompt", map[string]any{"git_provider": "github", "task_type": "CREATE_MICROAGENT", "repo": "acme/github", "issue_number": 1, "title": "t"}, nil,
			http.StatusUnprocessableEntity, `Value error, task type "CREATE_MICROAGENT" has no prompt`, []any{"body", "suggested_task"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			body := map[string]any{"suggested_task": tc.task}
			for k, v := range tc.extra {
				body[k] = v
			}
			status, b := e.call("POST", "/api/conversations", key, body)
			assertProblems(t, status, b, []wire.Problem{problemAt("value_error", tc.msg, tc.loc...)})
			checkDBUnchanged(t, before, e.dbRows())
		})
	}
	t.Run("unreachable repository", func(t *testing.T) {
		e := e.in(t)
		status, b := e.call("POST", "/api/conversations", key, map[string]any{
			"suggested_task": map[string]any{"git_provider": "github", "repo": "acme/nowhere", "issue_number": 1, "title": "t"}})
		if status != http.StatusUnauthorized || !strings.Contains(string(b), "Unable to access repo acme/nowhere") {
			t.Errorf("status %d %s, want 401 Unable to access repo", status, b)
		}
		checkDBUnchanged(t, before, e.dbRows())
	})
}

// TestSuggestedTaskV1: the V1 start request takes suggested_task too; the model's first
// request holds the pull request as the provider has it, and the agent has the provider's
// tools to work on it.
func TestSuggestedTaskV1(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("v1-tasks")
	token := e.storeToken(key, "github", "dev")
	gh := e.providers["github"]
	gh.AddRepo(providertest.Repo{FullName: "acme/app", Private: true, Members: []string{"dev"}})
	pr := gh.AddPullRequest(providertest.PullRequest{Repo: "acme/app", Title: "Rework the cache", Body: "Replaces the LRU.", Author: "dev",
		Head: "cache", Base: "main", Conflicts: true})

	var first llmtest.RecordedRequest
	e.scripted(key, llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		first = req
		return llmtest.Text("On it.")
	}})
	c := e.startAgent(key, map[string]any{
		"suggested_task": map[string]any{"git_provider": "github", "task_type": "MERGE_CONFLICTS", "repo": "acme/app", "issue_number": pr, "title": "t"}})
	c.waitStatus("finished")
	conv := e.getConversation(key, c.id)
	if strOf(conv.Trigger) != "suggested_task" || strOf(conv.SelectedRepository) != "acme/app" || strOf(conv.GitProvider) != "github" {
		t.Errorf("conversation %+v: want trigger suggested_task on github acme/app", conv)
	}
	var user string
	for _, m := range first.Messages {
		if m.Role == "user" {
			user = m.Text()
			break
		}
	}
	for _, w := range []string{fmt.Sprintf("pull request #%d", pr), "merge conflicts with main", "Replaces the LRU.", "the branch cache", "read_pull_request"} {
		if !strings.Contains(user, w) {
			t.Errorf("the model's first message lacks %q:\n%s", w, user)
		}
	}
	offered := map[string]bool{}
	for _, s := range first.Tools {
		offered[s.Name] = true
	}
	if !offered["read_pull_request"] || !offered["create_pull_request"] || !offered["read_issue"] {
		t.Errorf("the model was offered %v", offered)
	}
	e.scanForToken(key, c, token)
}
