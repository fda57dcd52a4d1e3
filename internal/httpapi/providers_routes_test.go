package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/wire"
)

// wantStatusDetail fails unless the answer has the status and a detail holding every part.
func wantStatusDetail(t *testing.T, status int, body []byte, wantStatus int, parts ...string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d body %s, want %d", status, body, wantStatus)
	}
	wantDetail(t, body, parts...)
}

// TestAddGitProvidersChecksTokens: each token is checked with its provider (at its host)
// before anything is stored; a refused token is a 401 naming the provider, and the request
// stores nothing. The V1 routes do the same.
func TestAddGitProvidersChecksTokens(t *testing.T) {
	// A provider that is down, as the server's Bitbucket.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	e := newEnv(t, func(c *config.Config) { c.BitbucketAPIURL = down.URL + "/2.0" })
	aliceID, alice := e.newUser("alice")
	rec := &bodyRecorder{e: e}
	goodGH, goodGL := e.providerUser("github", "alice"), e.providerUser("gitlab", "alice")
	const refused = "ghp_REFUSED-by-the-provider-0042"
	post := func(path string, tokens map[string]any) (int, []byte) {
		return rec.call("POST", path, alice, map[string]any{"provider_tokens": tokens})
	}

	t.Run("a refused token stores nothing", func(t *testing.T) {
		e := e.in(t)
		before := e.dbRows()
		for _, path := range []string{"/api/add-git-providers", "/api/v1/secrets/git-providers"} {
			status, body := post(path, map[string]any{"gitlab": map[string]any{"token": goodGL}, "github": map[string]any{"token": refused}})
			wantStatusDetail(t, status, body, http.StatusUnauthorized, "github", "refused")
		}
		checkDBUnchanged(t, before, e.dbRows())
	})

	t.Run("good tokens are stored", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
			"github": map[string]any{"token": goodGH}, "gitlab": map[string]any{"token": goodGL}}}, http.StatusOK), "Git providers stored")
		if got := e.storedTokens(aliceID); string(got["github"].TokenSealed) != goodGH || string(got["gitlab"].TokenSealed) != goodGL {
			t.Errorf("stored %v", got)
		}
	})

	t.Run("hosts", func(t *testing.T) {
		e := e.in(t)
		before := e.dbRows()
		for _, tc := range []struct {
			name, provider, host, msg string
		}{
			{"plain http to a host the administrator did not allow", "gitlab", "http://10.255.255.1", "plain http"},
			{"not a host", "github", "ftp://git.example", "https://"},
			{"enterprise_sso without a host", "enterprise_sso", "", "needs a host"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tok := map[string]any{"token": "tok-for-a-bad-host-0043"}
				if tc.host != "" {
					tok["host"] = tc.host
				}
				status, body := post("/api/add-git-providers", map[string]any{tc.provider: tok})
				var got struct {
					Detail []struct {
						Loc []any  `json:"loc"`
						Msg string `json:"msg"`
					} `json:"detail"`
				}
				if status != http.StatusUnprocessableEntity || json.Unmarshal(body, &got) != nil || len(got.Detail) != 1 {
					t.Fatalf("status %d body %s, want one 422 problem", status, body)
				}
				if want := []any{"body", "provider_tokens", tc.provider, "host"}; !reflect.DeepEqual(got.Detail[0].Loc, want) || !strings.Contains(got.Detail[0].Msg, tc.msg) {
					t.Errorf("problem %+v, want at %v saying %q", got.Detail[0], want, tc.msg)
				}
			})
		}
		checkDBUnchanged(t, before, e.dbRows())
	})

	t.Run("a provider that is down", func(t *testing.T) {
		e := e.in(t)
		before := e.dbRows()
		status, body := post("/api/add-git-providers", map[string]any{"bitbucket": map[string]any{"token": "bb-token-0044"}})
		wantStatusDetail(t, status, body, http.StatusBadGateway, "could not be reached")
		checkDBUnchanged(t, before, e.dbRows())
	})

	t.Run("enterprise_sso: the host's API is detected", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		gl := providertest.NewGitLab(t)
		gl.AddUser("glpat-enterprise-0045", providertest.User{Login: "alice"})
		wantMessage(t, rec.must("POST", "/api/v1/secrets/git-providers", alice, map[string]any{"provider_tokens": map[string]any{
			"enterprise_sso": map[string]any{"token": "glpat-enterprise-0045", "host": gl.Root()}}}, http.StatusOK), "Git providers stored")
		if got := e.storedTokens(aliceID)["enterprise_sso"]; got.Host != gl.Root() {
			t.Errorf("stored %+v", got)
		}
		gl.AddRepo(providertest.Repo{FullName: "corp/tool", Branches: []string{"x"}})
		var page struct {
			Branches []struct {
				Name string `json:"name"`
			} `json:"branches"`
		}
		rec.must("GET", "/api/user/repository/branches?repository=corp/tool&selected_provider=enterprise_sso", alice, nil, http.StatusOK)
		e.must("GET", "/api/user/repository/branches?repository=corp/tool", alice, nil, http.StatusOK, &page)
		if len(page.Branches) != 2 {
			t.Errorf("branches %+v", page)
		}
	})

	t.Run("V1 delete removes them", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("DELETE", "/api/v1/secrets/git-providers", alice, nil, http.StatusOK), "Unset Git provider tokens")
		if got := e.storedTokens(aliceID); len(got) != 0 {
			t.Errorf("stored after delete %v", got)
		}
	})

	rec.checkNone(t, []string{goodGH, goodGL, refused, "glpat-enterprise-0045", "bb-token-0044", "tok-for-a-bad-host-0043"})
}

type repoJSON struct {
	ID          string  `json:"id"`
	FullName    string  `json:"full_name"`
	GitProvider string  `json:"git_provider"`
	IsPublic    bool    `json:"is_public"`
	LinkHeader  *string `json:"link_header"`
	MainBranch  *string `json:"main_branch"`
	OwnerType   *string `json:"owner_type"`
	PushedAt    *string `json:"pushed_at"`
}

// TestUserRepositories: the caller's repositories, a page at a time, from one provider or
// from each of theirs, in OpenHands' shape.
func TestUserRepositories(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	for _, r := range []string{"octo/one", "octo/two", "octo/three"} {
		e.repo(alice, "github", r)
	}
	e.repo(alice, "gitlab", "group/sub/lab")
	list := func(query string) []repoJSON {
		var out []repoJSON
		e.must("GET", "/api/user/repositories"+query, alice, nil, http.StatusOK, &out)
		return out
	}
	names := func(rs []repoJSON) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.GitProvider+":"+r.FullName)
		}
		return out
	}

	first := list("?selected_provider=github&page=1&per_page=2&sort=pushed")
	if got, want := names(first), []string{"github:octo/three", "github:octo/two"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first page %v, want %v", got, want)
	}
	r := first[0]
	if r.LinkHeader == nil || !strings.Contains(*r.LinkHeader, "page=2") || !strings.Contains(*r.LinkHeader, `rel="next"`) ||
		r.MainBranch == nil || *r.MainBranch != "main" || !r.IsPublic || r.ID == "" || r.OwnerType == nil || r.PushedAt == nil {
		t.Errorf("repository %+v", r)
	}
	last := list("?selected_provider=github&page=2&per_page=2")
	if got := names(last); !reflect.DeepEqual(got, []string{"github:octo/one"}) || last[0].LinkHeader != nil {
		t.Errorf("last page %v (link %v)", got, last[0].LinkHeader)
	}
	if got, want := names(list("")), []string{"github:octo/three", "github:octo/two", "github:octo/one", "gitlab:group/sub/lab"}; !reflect.DeepEqual(got, want) {
		t.Errorf("all providers %v, want %v", got, want)
	}

	status, body := e.call("GET", "/api/user/repositories", bob, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No git provider token")
	status, body = e.call("GET", "/api/user/repositories?selected_provider=bitbucket", alice, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No bitbucket token")
	status, body = e.call("GET", "/api/user/repositories?per_page=0", alice, nil)
	assertProblems(t, status, body, []wire.Problem{problemAt("greater_than_equal", "Input should be greater than or equal to 1", "query", "per_page")})
}

// TestRepositoryBranches: a repository's branches, a page at a time, from the provider whose
// token reaches it.
func TestRepositoryBranches(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.token(alice, "gitlab")
	e.providers["gitlab"].AddRepo(providertest.Repo{FullName: "group/app", Branches: []string{"dev", "feature"}})
	var page struct {
		Branches []struct {
			Name      string `json:"name"`
			CommitSHA string `json:"commit_sha"`
			Protected bool   `json:"protected"`
		} `json:"branches"`
		HasNextPage bool `json:"has_next_page"`
		CurrentPage int  `json:"current_page"`
		PerPage     int  `json:"per_page"`
		TotalCount  *int `json:"total_count"`
	}
	e.must("GET", "/api/user/repository/branches?repository=group/app&page=1&per_page=2", alice, nil, http.StatusOK, &page)
	if len(page.Branches) != 2 || page.Branches[0].Name != "main" || !page.Branches[0].Protected || page.Branches[0].CommitSHA == "" ||
		!page.HasNextPage || page.CurrentPage != 1 || page.PerPage != 2 || page.TotalCount == nil || *page.TotalCount != 3 {
		t.Errorf("first page %+v", page)
	}
	e.must("GET", "/api/user/repository/branches?repository=group/app&page=2&per_page=2", alice, nil, http.StatusOK, &page)
	if len(page.Branches) != 1 || page.Branches[0].Name != "feature" || page.HasNextPage {
		t.Errorf("second page %+v", page)
	}
	status, body := e.call("GET", "/api/user/repository/branches?repository=group/elsewhere", alice, nil)
	wantStatusDetail(t, status, body, http.StatusNotFound, "gitlab", "group/elsewhere")
	status, body = e.call("GET", "/api/user/repository/branches?repository=../../etc", alice, nil)
	wantStatusDetail(t, status, body, http.StatusUnprocessableEntity, "..")
	status, body = e.call("GET", "/api/user/repository/branches", alice, nil)
	assertProblems(t, status, body, []wire.Problem{problemAt("missing", "Field required", "query", "repository")})
}

// TestSuggestedTasks: assigned issues and the caller's pull requests that need them, in
// OpenHands' shape.
func TestSuggestedTasks(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.token(alice, "github")
	login := "user0"
	gh := e.providers["github"]
	gh.AddRepo(providertest.Repo{FullName: "octo/app", Branches: []string{"fix"}})
	issue := gh.AddIssue(providertest.Issue{Repo: "octo/app", Title: "Crash", Assignees: []string{login}})
	pr := gh.AddPullRequest(providertest.PullRequest{Repo: "octo/app", Title: "Fix", Author: login, Head: "fix", Base: "main",
		Checks: []providertest.Check{{Name: "ci", State: "failure"}}})
	var tasks []map[string]any
	e.must("GET", "/api/user/suggested-tasks", alice, nil, http.StatusOK, &tasks)
	want := []map[string]any{
		{"git_provider": "github", "task_type": "FAILING_CHECKS", "repo": "octo/app", "issue_number": float64(pr), "title": "Fix"},
		{"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "octo/app", "issue_number": float64(issue), "title": "Crash"},
	}
	if !reflect.DeepEqual(tasks, want) {
		t.Errorf("tasks %v, want %v", tasks, want)
	}
	_, bob := e.newUser("bob")
	status, body := e.call("GET", "/api/user/suggested-tasks", bob, nil)
	wantStatusDetail(t, status, body, http.StatusUnauthorized, "No git provider token")
}

// TestCreateChecksRepository: a conversation on a repository the caller's tokens cannot reach
// is refused at once, V0 with OpenHands' 401, V1 with a 422 at selected_repository, and
// nothing is stored.
func TestCreateChecksRepository(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.repo(alice, "github", "octo/reachable")
	e.providers["github"].AddRepo(providertest.Repo{FullName: "octo/private", Private: true, Members: []string{"someone"}})
	before := e.dbRows()
	for _, tc := range []struct {
		name, repo, provider string
		detail               []string
	}{
		{"private to someone else", "octo/private", "github", []string{"octo/private", "github"}},
		{"nowhere", "octo/nowhere", "", []string{"octo/nowhere"}},
		{"no token for the provider", "octo/reachable", "gitlab", []string{"gitlab"}},
		{"not a repository name", "octo/../x", "", []string{"octo/../x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			v0 := map[string]any{"repository": tc.repo, "initial_user_msg": "hi"}
			v1 := map[string]any{"selected_repository": tc.repo}
			if tc.provider != "" {
				v0["git_provider"], v1["git_provider"] = tc.provider, tc.provider
			}
			status, body := e.call("POST", "/api/conversations", alice, v0)
			wantStatusDetail(t, status, body, http.StatusUnauthorized, append([]string{"Unable to access repo"}, tc.detail...)...)
			status, body = e.call("POST", "/api/v1/app-conversations", alice, v1)
			var got struct {
				Detail []struct {
					Loc []any  `json:"loc"`
					Msg string `json:"msg"`
				} `json:"detail"`
			}
			if status != http.StatusUnprocessableEntity || json.Unmarshal(body, &got) != nil || len(got.Detail) != 1 ||
				!reflect.DeepEqual(got.Detail[0].Loc, []any{"body", "selected_repository"}) {
				t.Fatalf("V1: status %d body %s, want a 422 at selected_repository", status, body)
			}
		})
	}
	checkDBUnchanged(t, before, e.dbRows())
	id := e.v0Create(alice, map[string]any{"repository": "octo/reachable", "git_provider": "github"})
	if info := e.v0Get(alice, id); strOf(info.SelectedRepository) != "octo/reachable" {
		t.Errorf("created %+v", info)
	}
}
