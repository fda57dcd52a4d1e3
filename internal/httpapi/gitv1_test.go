package httpapi_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/wire"
)

// searchPage is a page of OpenHands' /api/v1/git/*/search routes.
type searchPage[T any] struct {
	Items      []T     `json:"items"`
	NextPageID *string `json:"next_page_id"`
}

// follow reads every page of a search, following next_page_id as a client does.
func follow[T any](e *env, key, path string) [][]T {
	e.t.Helper()
	var pages [][]T
	next := ""
	for range 20 {
		var p searchPage[T]
		url := path
		if next != "" {
			url += "&page_id=" + next
		}
		e.must("GET", url, key, nil, http.StatusOK, &p)
		if p.Items == nil {
			e.t.Fatalf("GET %s: items is not a list", url)
		}
		pages = append(pages, p.Items)
		if p.NextPageID == nil {
			return pages
		}
		next = *p.NextPageID
	}
	e.t.Fatalf("GET %s: more than 20 pages", path)
	return nil
}

// TestGitRepositoriesSearchV1: the caller's repositories at one provider, in pages of items
// and next_page_id; a query keeps those whose name contains it.
func TestGitRepositoriesSearchV1(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	for _, r := range []string{"octo/one", "octo/two", "octo/three", "other/tool"} {
		e.repo(alice, "github", r)
	}
	names := func(pages [][]repoJSON) [][]string {
		out := [][]string{}
		for _, p := range pages {
			ns := []string{}
			for _, r := range p {
				if r.GitProvider != "github" || r.ID == "" || r.MainBranch == nil || r.LinkHeader != nil {
					t.Errorf("repository %+v", r)
				}
				ns = append(ns, r.FullName)
			}
			out = append(out, ns)
		}
		return out
	}
	got := names(follow[repoJSON](e, alice, "/api/v1/git/repositories/search?provider=github&limit=3"))
	if want := [][]string{{"other/tool", "octo/three", "octo/two"}, {"octo/one"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	got = names(follow[repoJSON](e, alice, "/api/v1/git/repositories/search?provider=github&limit=1&query=OCTO/T&sort_order=stars-desc"))
	if want := [][]string{{"octo/three"}, {"octo/two"}, {}}; !reflect.DeepEqual(got, want) {
		t.Errorf("query pages %v, want %v", got, want)
	}

	for _, tc := range []struct {
		name, path, key string
		status          int
		detail          []string
		problem         *wire.Problem
	}{
		{name: "no token", path: "?provider=github", key: bob, status: 401, detail: []string{"No github token"}},
		{name: "no token for the provider", path: "?provider=gitlab", key: alice, status: 401, detail: []string{"No gitlab token"}},
		{name: "sort without query", path: "?provider=github&sort_order=stars-desc", key: alice, status: 400, detail: []string{"sort_order"}},
		{name: "no provider", path: "", key: alice, problem: &wire.Problem{Type: "missing", Msg: "Field required", Loc: []any{"query", "provider"}}},
		{name: "unknown provider", path: "?provider=svn", key: alice, status: 422},
		{name: "limit too large", path: "?provider=github&limit=101", key: alice, problem: &wire.Problem{Type: "less_than_equal", Msg: "Input should be less than or equal to 100", Loc: []any{"query", "limit"}}},
		{name: "bad page id", path: "?provider=github&page_id=x", key: alice, status: 422, detail: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("GET", "/api/v1/git/repositories/search"+tc.path, tc.key, nil)
			switch {
			case tc.problem != nil:
				assertProblems(t, status, body, []wire.Problem{*tc.problem})
			case tc.detail != nil:
				wantStatusDetail(t, status, body, tc.status, tc.detail...)
			case status != tc.status:
				t.Fatalf("status %d body %s, want %d", status, body, tc.status)
			}
		})
	}
}

// TestGitBranchesSearchV1: a repository's branches in pages; a query keeps the matching ones.
func TestGitBranchesSearchV1(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.token(alice, "gitlab")
	e.providers["gitlab"].AddRepo(providertest.Repo{FullName: "group/app", Branches: []string{"dev", "feature-a", "feature-b"}})
	type branch struct {
		Name      string  `json:"name"`
		CommitSHA string  `json:"commit_sha"`
		Protected bool    `json:"protected"`
		LastPush  *string `json:"last_push_date"`
	}
	names := func(pages [][]branch) [][]string {
		out := [][]string{}
		for _, p := range pages {
			ns := []string{}
			for _, b := range p {
				if b.CommitSHA == "" {
					t.Errorf("branch %+v", b)
				}
				ns = append(ns, b.Name)
			}
			out = append(out, ns)
		}
		return out
	}
	got := names(follow[branch](e, alice, "/api/v1/git/branches/search?provider=gitlab&repository=group/app&query=&limit=3"))
	if want := [][]string{{"main", "dev", "feature-a"}, {"feature-b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	got = names(follow[branch](e, alice, "/api/v1/git/branches/search?provider=gitlab&repository=group/app&query=Feature&limit=2"))
	if want := [][]string{{"feature-a", "feature-b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("query pages %v, want %v", got, want)
	}
	status, body := e.call("GET", "/api/v1/git/branches/search?provider=gitlab&repository=group/elsewhere&query=", alice, nil)
	wantStatusDetail(t, status, body, http.StatusNotFound, "gitlab", "group/elsewhere")
	status, body = e.call("GET", "/api/v1/git/branches/search?provider=github&repository=group/app&query=", alice, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No github token")
	status, body = e.call("GET", "/api/v1/git/branches/search?provider=gitlab", alice, nil)
	assertProblems(t, status, body, []wire.Problem{problemAt("missing", "Field required", "query", "repository")})
}

// TestGitSuggestedTasksSearchV1: the suggested tasks of the V0 route, a page at a time.
func TestGitSuggestedTasksSearchV1(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.token(alice, "github")
	gh := e.providers["github"]
	gh.AddRepo(providertest.Repo{FullName: "octo/app"})
	var want []string
	for i := range 3 {
		n := gh.AddIssue(providertest.Issue{Repo: "octo/app", Title: fmt.Sprint("issue ", i), Assignees: []string{"user0"}})
		want = append(want, fmt.Sprint(n))
	}
	type task struct {
		GitProvider string `json:"git_provider"`
		TaskType    string `json:"task_type"`
		Repo        string `json:"repo"`
		IssueNumber int    `json:"issue_number"`
		Title       string `json:"title"`
	}
	pages := follow[task](e, alice, "/api/v1/git/suggested-tasks/search?limit=2")
	var got []string
	for _, p := range pages {
		for _, tk := range p {
			if tk.GitProvider != "github" || tk.TaskType != "OPEN_ISSUE" || tk.Repo != "octo/app" || tk.Title == "" {
				t.Errorf("task %+v", tk)
			}
			got = append(got, fmt.Sprint(tk.IssueNumber))
		}
	}
	if len(pages) != 2 || len(pages[0]) != 2 {
		t.Errorf("pages %v, want 2 then 1", pages)
	}
	if !reflect.DeepEqual(sorted(got), sorted(want)) {
		t.Errorf("issues %v, want %v", got, want)
	}
	_, bob := e.newUser("bob")
	status, body := e.call("GET", "/api/v1/git/suggested-tasks/search", bob, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No git provider token")
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestUsersGitInfo: the caller's account at their first or a given provider, in OpenHands'
// shape.
func TestUsersGitInfo(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.storeToken(alice, "gitlab", "alice-gl")
	ghToken := e.providerUser("github", "alice-gh")
	e.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
		"github": map[string]any{"token": ghToken}, "gitlab": map[string]any{"token": e.tokens[[2]string{alice, "gitlab"}]}}}, http.StatusOK, nil)
	info := func(query string) map[string]any {
		var out map[string]any
		e.must("GET", "/api/v1/users/git-info"+query, alice, nil, http.StatusOK, &out)
		return out
	}
	first := info("")
	for _, k := range []string{"id", "login", "avatar_url", "company", "name", "email"} {
		if _, ok := first[k]; !ok {
			t.Errorf("git-info lacks %s: %v", k, first)
		}
	}
	if first["login"] != "alice-gh" || first["company"] != nil || first["avatar_url"] == "" {
		t.Errorf("git-info of the first provider: %v", first)
	}
	if gl := info("?provider=gitlab"); gl["login"] != "alice-gl" || gl["email"] != "alice-gl@example.com" {
		t.Errorf("git-info at gitlab: %v", gl)
	}
	status, body := e.call("GET", "/api/v1/users/git-info", bob, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No git provider token")
	status, body = e.call("GET", "/api/v1/users/git-info?provider=bitbucket", alice, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No bitbucket token")
	status, _ = e.call("GET", "/api/v1/users/git-info?provider=svn", alice, nil)
	if status != http.StatusUnprocessableEntity {
		t.Errorf("unknown provider: status %d, want 422", status)
	}
}

// TestGitInstallationsSearchV1: GitHub App installations and Bitbucket workspaces, in pages
// of items and next_page_id; a personal GitHub token has none; GitLab has no such thing (400,
// as OpenHands); without a token it is a 401.
func TestGitInstallationsSearchV1(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")

	e.storeToken(alice, "github", "ada")
	if got := follow[string](e, alice, "/api/v1/git/installations/search?provider=github"); !reflect.DeepEqual(got, [][]string{{}}) {
		t.Errorf("a personal token's installations: %v", got)
	}
	tok := e.token(alice, "github")
	e.providers["github"].AddUser(tok, providertest.User{Login: "ada", Installations: []int64{101, 202, 303}})
	if got := follow[string](e, alice, "/api/v1/git/installations/search?provider=github&limit=2"); !reflect.DeepEqual(got, [][]string{{"101", "202"}, {"303"}}) {
		t.Errorf("installations in pages of 2: %v", got)
	}

	e.storeToken(alice, "bitbucket", "ada")
	e.providers["bitbucket"].AddRepo(providertest.Repo{FullName: "acme/app", Private: true, Members: []string{"ada"}})
	if got := follow[string](e, alice, "/api/v1/git/installations/search?provider=bitbucket"); !reflect.DeepEqual(got, [][]string{{"ada", "acme"}}) {
		t.Errorf("workspaces: %v", got)
	}

	e.storeToken(alice, "gitlab", "ada")
	if status, body := e.call("GET", "/api/v1/git/installations/search?provider=gitlab", alice, nil); status != http.StatusBadRequest {
		t.Errorf("gitlab: %d %s, want 400", status, body)
	}
	if status, body := e.call("GET", "/api/v1/git/installations/search?provider=github", bob, nil); status != http.StatusUnauthorized {
		t.Errorf("without a stored token: %d %s, want 401", status, body)
	}
	for _, tc := range []struct{ query, typ, field string }{
		{"", "missing", "provider"},
		{"provider=cvs", "enum", "provider"},
		{"provider=github&limit=0", "greater_than_equal", "limit"},
		{"provider=github&page_id=x", "value_error", "page_id"},
	} {
		status, body := e.call("GET", "/api/v1/git/installations/search?"+tc.query, alice, nil)
		wantProblem(t, status, body, tc.typ, "query", tc.field)
	}
}
