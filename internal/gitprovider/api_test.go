package gitprovider_test

import (
	"context"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
)

// account is one way of reaching a provider: which double, how the user names it (provider,
// host) and how the server is configured.
type account struct {
	name     string
	provider string
	family   string
	token    string
	start    func(t providertest.Cleaner) *providertest.Server
	// configured: the double is the server's configured API; otherwise the user's host.
	configured bool
	prefix     string // the repositories' owner (Data Center: a project key)
	gitAuth    func(token string) string
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

var accounts = []account{
	{name: "github.com", provider: "github", family: gitprovider.FamilyGitHub, token: "ghp_suiteTOKEN0001", start: providertest.NewGitHub, configured: true, prefix: "team",
		gitAuth: func(tok string) string { return basic("x-access-token", tok) }},
	{name: "GitHub Enterprise", provider: "github", family: gitprovider.FamilyGitHub, token: "ghp_suiteTOKEN0002", start: providertest.NewGitHub, prefix: "team",
		gitAuth: func(tok string) string { return basic("x-access-token", tok) }},
	{name: "gitlab.com", provider: "gitlab", family: gitprovider.FamilyGitLab, token: "glpat-suiteTOKEN0003", start: providertest.NewGitLab, configured: true, prefix: "team/sub",
		gitAuth: func(tok string) string { return basic("oauth2", tok) }},
	{name: "self-managed GitLab", provider: "gitlab", family: gitprovider.FamilyGitLab, token: "glpat-suiteTOKEN0004", start: providertest.NewGitLab, prefix: "team",
		gitAuth: func(tok string) string { return basic("oauth2", tok) }},
	{name: "Bitbucket Cloud access token", provider: "bitbucket", family: gitprovider.FamilyBitbucket, token: "bbat-suiteTOKEN0005", start: providertest.NewBitbucket, configured: true, prefix: "team",
		gitAuth: func(tok string) string { return basic("x-token-auth", tok) }},
	{name: "Bitbucket Cloud app password", provider: "bitbucket", family: gitprovider.FamilyBitbucket, token: "octo:suiteAPPPASSWORD0006", start: providertest.NewBitbucket, configured: true, prefix: "team",
		gitAuth: func(tok string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(tok)) }},
	{name: "Bitbucket Data Center", provider: "bitbucket", family: gitprovider.FamilyBitbucketDC, token: "bbdc-suiteTOKEN0007", start: providertest.NewBitbucketDC, prefix: "TEAM",
		gitAuth: func(tok string) string { return "Bearer " + tok }},
	{name: "enterprise_sso on GitHub Enterprise", provider: "enterprise_sso", family: gitprovider.FamilyGitHub, token: "ghp_suiteTOKEN0008", start: providertest.NewGitHub, prefix: "team",
		gitAuth: func(tok string) string { return basic("x-access-token", tok) }},
	{name: "enterprise_sso on GitLab", provider: "enterprise_sso", family: gitprovider.FamilyGitLab, token: "glpat-suiteTOKEN0009", start: providertest.NewGitLab, prefix: "team",
		gitAuth: func(tok string) string { return basic("oauth2", tok) }},
	{name: "enterprise_sso on Bitbucket Data Center", provider: "enterprise_sso", family: gitprovider.FamilyBitbucketDC, token: "bbdc-suiteTOKEN0010", start: providertest.NewBitbucketDC, prefix: "TEAM",
		gitAuth: func(tok string) string { return "Bearer " + tok }},
}

// setUp starts the account's double with the fixture, and a service whose user has stored
// the token.
func (a account) setUp(t *testing.T) (*env, *providertest.Server, providerFixture, gitprovider.API) {
	t.Helper()
	srv := a.start(t)
	f := addFixture(srv, a.token, a.prefix)
	var o envOptions
	host := srv.Root()
	if a.configured {
		host = ""
		switch a.provider {
		case "github":
			o.endpoints.GitHub = srv.APIURL()
		case "gitlab":
			o.endpoints.GitLab = srv.APIURL()
		case "bitbucket":
			o.endpoints.Bitbucket = srv.APIURL()
		}
	}
	e := newEnv(t, o)
	e.mustStore(a.provider, a.token, host)
	api, err := e.svc.API(context.Background(), e.userID, a.provider)
	if err != nil {
		t.Fatal(err)
	}
	if api.Family() != a.family {
		t.Fatalf("family %s, want %s", api.Family(), a.family)
	}
	return e, srv, f, api
}

// TestProviderAPIs runs every operation against every provider's double.
func TestProviderAPIs(t *testing.T) {
	for _, a := range accounts {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			e, srv, f, api := a.setUp(t)
			ctx := context.Background()
			noSecret := func(err error) {
				t.Helper()
				if err != nil && strings.Contains(err.Error(), a.token) {
					t.Errorf("an error holds the token: %v", err)
				}
			}

			t.Run("user", func(t *testing.T) {
				u, err := api.User(ctx)
				if err != nil || u.Login != f.login || u.Email != f.email || u.ID == "" {
					t.Fatalf("User: %+v, %v", u, err)
				}
				// Bitbucket keeps no company on a profile.
				wantCompany := "Octo Corp"
				if a.family == gitprovider.FamilyBitbucket || a.family == gitprovider.FamilyBitbucketDC {
					wantCompany = ""
				}
				// Data Center gives no avatar unless asked for a size.
				if (u.AvatarURL == "") != (a.family == gitprovider.FamilyBitbucketDC) {
					t.Errorf("User avatar %q", u.AvatarURL)
				}
				if u.Company != wantCompany {
					t.Errorf("User company %q, want %q", u.Company, wantCompany)
				}
			})

			t.Run("repository", func(t *testing.T) {
				r, err := api.Repository(ctx, f.repo)
				if err != nil {
					t.Fatal(err)
				}
				if r.FullName != f.repo || r.DefaultBranch != "main" || r.CloneURL == "" || r.OwnerType != "organization" {
					t.Errorf("Repository: %+v", r)
				}
				_, err = api.Repository(ctx, f.secret)
				wantKind(t, err, gitprovider.ErrNotFound, a.token)
				_, err = api.Repository(ctx, f.repo+"/../x")
				wantKind(t, err, gitprovider.ErrBadRepository)
			})

			t.Run("repositories, paged", func(t *testing.T) {
				var names []string
				for page := 1; ; page++ {
					p, err := api.Repositories(ctx, page, 1)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range p.Items {
						names = append(names, r.FullName)
					}
					if !p.HasNext || page > 5 {
						break
					}
				}
				// Most recently pushed first; the private repository of someone else is not listed.
				want := []string{a.prefix + "/tools", f.repo}
				if !reflect.DeepEqual(names, want) {
					t.Errorf("repositories %v, want %v", names, want)
				}
			})

			t.Run("branches, paged", func(t *testing.T) {
				p, err := api.Branches(ctx, f.repo, 1, 5)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Items) != 5 || !p.HasNext || p.Items[0].Name != "main" || p.Items[0].CommitSHA == "" {
					t.Errorf("first page %+v", p)
				}
				p, err = api.Branches(ctx, f.repo, 2, 5)
				if err != nil || len(p.Items) != 2 || p.HasNext {
					t.Errorf("second page %+v, %v", p, err)
				}
				_, err = api.Branches(ctx, f.secret, 1, 5)
				wantKind(t, err, gitprovider.ErrNotFound)
			})

			t.Run("suggested tasks", func(t *testing.T) {
				e := e.in(t)
				tasks, err := e.svc.SuggestedTasks(ctx, e.userID)
				if err != nil {
					t.Fatal(err)
				}
				want := []gitprovider.Task{
					{Provider: a.provider, Type: gitprovider.TaskMergeConflicts, Repository: f.repo, Number: f.pulls["conflicts"], Title: "Conflicting"},
					{Provider: a.provider, Type: gitprovider.TaskFailingChecks, Repository: f.repo, Number: f.pulls["failing"], Title: "Failing"},
					{Provider: a.provider, Type: gitprovider.TaskUnresolvedComments, Repository: f.repo, Number: f.pulls["commented"], Title: "Reviewed"},
				}
				// Bitbucket keeps no cross-repository list of a user's issues (Data Center none at all).
				if a.family == gitprovider.FamilyGitHub || a.family == gitprovider.FamilyGitLab {
					want = append(want, gitprovider.Task{Provider: a.provider, Type: gitprovider.TaskOpenIssue, Repository: f.repo, Number: f.issue, Title: "Crash on start"})
				}
				if !reflect.DeepEqual(tasks, want) {
					t.Errorf("tasks\n%+v\nwant\n%+v", tasks, want)
				}
			})

			t.Run("issue with comments", func(t *testing.T) {
				i, err := api.Issue(ctx, f.repo, f.issue)
				if a.family == gitprovider.FamilyBitbucketDC {
					wantKind(t, err, gitprovider.ErrUnsupported)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if i.Title != "Crash on start" || i.Body != "It crashes." || i.State == "" || len(i.Comments) != 1 || i.Comments[0].Body != "Still crashes on 1.2" || i.Comments[0].Author != "someone" {
					t.Errorf("Issue: %+v", i)
				}
				_, err = api.Issue(ctx, f.repo, 999)
				wantKind(t, err, gitprovider.ErrNotFound)
			})

			t.Run("pull request with checks and reviews", func(t *testing.T) {
				p, err := api.PullRequest(ctx, f.repo, f.pulls["failing"])
				if err != nil {
					t.Fatal(err)
				}
				wantChecks := []gitprovider.Check{{Name: "build", State: gitprovider.CheckSuccess}, {Name: "test", State: gitprovider.CheckFailure}}
				for i := range p.Checks {
					p.Checks[i].URL = ""
				}
				if p.Title != "Failing" || p.Head != "fix-2" || p.Base != "main" || p.State != "open" || p.HeadSHA == "" || !reflect.DeepEqual(p.Checks, wantChecks) {
					t.Errorf("PullRequest: %+v", p)
				}
				p, err = api.PullRequest(ctx, f.repo, f.pulls["commented"])
				if err != nil {
					t.Fatal(err)
				}
				wantReviews := []gitprovider.Review{{Author: "someone", State: gitprovider.ReviewChangesRequested}}
				switch a.family {
				case gitprovider.FamilyGitHub:
					wantReviews[0].Body = "Please rename"
				case gitprovider.FamilyGitLab:
					wantReviews = nil // GitLab's verdicts are approvals; its review is the open thread
				}
				if !reflect.DeepEqual(p.Reviews, wantReviews) {
					t.Errorf("reviews %+v, want %+v", p.Reviews, wantReviews)
				}
				var inline *gitprovider.Comment
				for i, c := range p.Comments {
					if c.Path != "" {
						inline = &p.Comments[i]
					}
				}
				if inline == nil || inline.Path != "main.go" || inline.Line != 3 || inline.Body != "rename this" {
					t.Errorf("comments %+v", p.Comments)
				}
				p, err = api.PullRequest(ctx, f.repo, f.pulls["conflicts"])
				if err != nil || !p.Conflicts {
					t.Errorf("conflicting pull request %+v, %v", p, err)
				}
			})

			t.Run("create pull request", func(t *testing.T) {
				p, err := api.CreatePullRequest(ctx, f.repo, gitprovider.NewPullRequest{Title: "Add feature", Body: "Closes #1", Head: "feature-x", Base: "main"})
				if err != nil {
					t.Fatal(err)
				}
				if p.Number == 0 || p.Title != "Add feature" || p.Head != "feature-x" || p.Base != "main" {
					t.Errorf("created %+v", p)
				}
				created := srv.Created()
				if len(created) != 1 || created[0].Number != p.Number || created[0].Author != f.login || created[0].Body != "Closes #1" {
					t.Errorf("the provider holds %+v", created)
				}
				_, err = api.CreatePullRequest(ctx, f.repo, gitprovider.NewPullRequest{Title: "Again", Head: "feature-x", Base: "main"})
				ge := wantKind(t, err, gitprovider.ErrRejected, a.token)
				if !strings.Contains(strings.ToLower(ge.ClientMessage()), "already") && !strings.Contains(ge.ClientMessage(), "Only one") {
					t.Errorf("the provider's reason is not in %q", ge.ClientMessage())
				}
				if len(srv.Created()) != 1 {
					t.Errorf("a refused pull request was created")
				}
			})

			t.Run("remote", func(t *testing.T) {
				e := e.in(t)
				r, err := e.svc.Remote(ctx, e.userID, "", f.repo)
				noSecret(err)
				if err != nil {
					t.Fatal(err)
				}
				if r.Provider != a.provider || r.Repository != f.repo || r.AuthorName != f.login || r.AuthorEmail != f.email {
					t.Errorf("Remote: %+v", r)
				}
				if r.URL == nil || r.URL.User != nil || r.URL.String() != srv.Root()+"/"+f.repo+".git" {
					t.Errorf("Remote URL %v, want %s/%s.git without credentials", r.URL, srv.Root(), f.repo)
				}
				if want := a.gitAuth(a.token); r.Authorization != want {
					t.Errorf("Authorization %q, want %q", r.Authorization, want)
				}
				_, err = e.svc.Remote(ctx, e.userID, a.provider, f.secret)
				wantKind(t, err, gitprovider.ErrNotFound, a.token)
				_, err = e.svc.Remote(ctx, e.userID, otherProvider(a.provider), f.repo)
				wantKind(t, err, gitprovider.ErrNoToken)
			})

			// Last: it adds to the double's state.
			t.Run("installations, paged", func(t *testing.T) {
				all := func(perPage int) [][]string {
					t.Helper()
					var pages [][]string
					for page := 1; ; page++ {
						p, err := api.Installations(ctx, page, perPage)
						noSecret(err)
						if err != nil {
							t.Fatalf("Installations page %d: %v", page, err)
						}
						pages = append(pages, p.Items)
						if !p.HasNext || page == 10 {
							return pages
						}
					}
				}
				var want [][]string
				switch a.family {
				case gitprovider.FamilyGitLab:
					_, err := api.Installations(ctx, 1, 10)
					wantKind(t, err, gitprovider.ErrUnsupported, a.token)
					return
				case gitprovider.FamilyGitHub:
					// A token that is no GitHub App user token has none to use.
					if got := all(10); !reflect.DeepEqual(got, [][]string{{}}) {
						t.Errorf("installations of a personal token: %v", got)
					}
					srv.AddUser(a.token, providertest.User{Login: f.login, Email: f.email, Installations: []int64{11, 22, 33}})
					want = [][]string{{"11", "22"}, {"33"}}
				case gitprovider.FamilyBitbucket:
					// The user's own workspace, and those of the private repositories they belong to.
					srv.AddRepo(providertest.Repo{FullName: "acme/x", Private: true, Members: []string{f.login}})
					srv.AddRepo(providertest.Repo{FullName: "zeta/y", Private: true, Members: []string{f.login}})
					want = [][]string{{f.login, "acme"}, {"zeta"}}
				case gitprovider.FamilyBitbucketDC:
					srv.AddRepo(providertest.Repo{FullName: "ACME/x"})
					srv.AddRepo(providertest.Repo{FullName: "ZETA/y"})
					srv.AddRepo(providertest.Repo{FullName: "HIDDEN/z", Private: true, Members: []string{"someone"}})
					want = [][]string{{"ACME", "TEAM"}, {"ZETA"}}
				}
				if got := all(2); !reflect.DeepEqual(got, want) {
					t.Errorf("installations %v, want %v", got, want)
				}
			})
		})
	}
}

func otherProvider(p string) string {
	if p == "gitlab" {
		return "github"
	}
	return "gitlab"
}

// TestBadTokens: a token the provider refuses is not stored, and the error names the provider
// and says the token was refused, for every provider.
func TestBadTokens(t *testing.T) {
	for _, a := range accounts {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			e, _, _, _ := a.setUp(t)
			before := e.stored()
			host := ""
			if !a.configured {
				toks, _ := e.db.ProviderTokens(context.Background(), e.userID)
				host = toks[0].Host
			}
			const bad = "wrong-TOKEN-never-stored-0001"
			err := e.store(a.provider, bad, host)
			ge := wantKind(t, err, gitprovider.ErrTokenRefused, bad)
			if ge.Provider != a.provider || !strings.Contains(ge.ClientMessage(), a.provider) || !strings.Contains(ge.ClientMessage(), "refused") {
				t.Errorf("message %q (provider %q) should name %s and say refused", ge.ClientMessage(), ge.Provider, a.provider)
			}
			if got := e.stored(); !reflect.DeepEqual(got, before) {
				t.Errorf("stored %v after a refused token, want %v", got, before)
			}
			// The stored good token is still the one in use.
			if _, err := e.svc.Remote(context.Background(), e.userID, a.provider, a.prefix+"/app"); err != nil {
				t.Errorf("the stored token no longer works: %v", err)
			}
		})
	}
}

// TestCheckOneFailsAll: with one good and one bad token in a request, nothing is stored.
func TestCheckOneFailsAll(t *testing.T) {
	gh, gl := providertest.NewGitHub(t), providertest.NewGitLab(t)
	gh.AddUser("ghp_good", providertest.User{Login: "octo"})
	e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitHub: gh.APIURL(), GitLab: gl.APIURL()}})
	err := e.svc.Store(context.Background(), e.userID, []gitprovider.TokenInput{
		{Provider: "github", Token: "ghp_good"}, {Provider: "gitlab", Token: "glpat-bad"}})
	ge := wantKind(t, err, gitprovider.ErrTokenRefused, "glpat-bad", "ghp_good")
	if ge.Provider != "gitlab" {
		t.Errorf("the failure names %q, want gitlab", ge.Provider)
	}
	if got := e.stored(); len(got) != 0 {
		t.Errorf("stored %v", got)
	}
}

// TestNewHostRechecksStoredToken: moving a stored token to another host (sending no token)
// checks it there first.
func TestNewHostRechecksStoredToken(t *testing.T) {
	a, b := providertest.NewGitHub(t), providertest.NewGitHub(t)
	a.AddUser("ghp_only_at_a", providertest.User{Login: "octo"})
	e := newEnv(t, envOptions{})
	e.mustStore("github", "ghp_only_at_a", a.Root())
	err := e.store("github", "", b.Root())
	wantKind(t, err, gitprovider.ErrTokenRefused, "ghp_only_at_a")
	toks, _ := e.db.ProviderTokens(context.Background(), e.userID)
	if len(toks) != 1 || toks[0].Host != a.Root() {
		t.Errorf("stored %+v, want the token at %s", toks, a.Root())
	}
}

// TestRemoteAcrossProviders: with no provider named, the first provider whose token reaches
// the repository is used; when none does, the error names them all.
func TestRemoteAcrossProviders(t *testing.T) {
	gh, gl := providertest.NewGitHub(t), providertest.NewGitLab(t)
	gh.AddUser("ghp_x", providertest.User{Login: "octo"})
	gl.AddUser("glpat-x", providertest.User{Login: "octo", Email: "o@example.com"})
	gl.AddRepo(providertest.Repo{FullName: "group/sub/project"})
	e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitHub: gh.APIURL(), GitLab: gl.APIURL()}})
	ctx := context.Background()
	if _, err := e.svc.Remote(ctx, e.userID, "", "group/project"); !errors.Is(err, gitprovider.ErrNoToken) {
		t.Errorf("Remote without tokens: %v, want ErrNoToken", err)
	}
	e.mustStore("github", "ghp_x", "")
	e.mustStore("gitlab", "glpat-x", "")
	r, err := e.svc.Remote(ctx, e.userID, "", "https://gitlab.example/group/sub/project.git")
	if err != nil || r.Provider != "gitlab" || r.Repository != "group/sub/project" {
		t.Fatalf("Remote: %+v, %v", r, err)
	}
	_, err = e.svc.Remote(ctx, e.userID, "", "nobody/nothing")
	ge := wantKind(t, err, gitprovider.ErrNotFound, "ghp_x", "glpat-x")
	if !strings.Contains(ge.ClientMessage(), "github, gitlab") || !strings.Contains(ge.ClientMessage(), "nobody/nothing") {
		t.Errorf("message %q", ge.ClientMessage())
	}
	_, err = e.svc.Remote(ctx, e.userID, "github", "group/sub/project")
	wantKind(t, err, gitprovider.ErrBadRepository)
}

// TestUserInfo: the account at the given provider, or at the first of the user's.
func TestUserInfo(t *testing.T) {
	gh, gl := providertest.NewGitHub(t), providertest.NewGitLab(t)
	gh.AddUser("ghp_x", providertest.User{Login: "octo-gh"})
	gl.AddUser("glpat-x", providertest.User{Login: "octo-gl", Email: "o@example.com", Company: "Lab Inc"})
	e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitHub: gh.APIURL(), GitLab: gl.APIURL()}})
	ctx := context.Background()
	if _, _, err := e.svc.UserInfo(ctx, e.userID, ""); !errors.Is(err, gitprovider.ErrNoToken) {
		t.Errorf("UserInfo without tokens: %v, want ErrNoToken", err)
	}
	e.mustStore("gitlab", "glpat-x", "")
	e.mustStore("github", "ghp_x", "")
	p, u, err := e.svc.UserInfo(ctx, e.userID, "")
	if err != nil || p != "github" || u.Login != "octo-gh" {
		t.Errorf("UserInfo of the first provider: %s %+v, %v", p, u, err)
	}
	p, u, err = e.svc.UserInfo(ctx, e.userID, "gitlab")
	if err != nil || p != "gitlab" || u.Login != "octo-gl" || u.Company != "Lab Inc" || u.Email != "o@example.com" {
		t.Errorf("UserInfo at gitlab: %s %+v, %v", p, u, err)
	}
	if _, _, err := e.svc.UserInfo(ctx, e.userID, "bitbucket"); !errors.Is(err, gitprovider.ErrNoToken) {
		t.Errorf("UserInfo at bitbucket: %v, want ErrNoToken", err)
	}
}

// TestRemoteIsCached: a Remote resolved a moment ago is given again without calls to the
// provider (a clone is several git requests, each resolved); storing the user's tokens again
// drops it.
func TestRemoteIsCached(t *testing.T) {
	gh := providertest.NewGitHub(t)
	gh.AddUser("ghp_cached", providertest.User{Login: "octo", Email: "octo@example.com"})
	gh.AddRepo(providertest.Repo{FullName: "octo/app"})
	e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitHub: gh.APIURL()}})
	e.mustStore("github", "ghp_cached", "")
	ctx := context.Background()
	resolve := func() gitprovider.Remote {
		t.Helper()
		r, err := e.svc.Remote(ctx, e.userID, "github", "octo/app")
		if err != nil || r.Repository != "octo/app" || r.URL == nil {
			t.Fatalf("Remote: %+v, %v", r, err)
		}
		return r
	}
	first := resolve()
	asked := len(gh.Requests())
	second := resolve()
	if got := len(gh.Requests()); got != asked {
		t.Errorf("the second Remote called the provider: %d requests, then %d", asked, got)
	}
	second.URL.Host = "changed.example"
	if third := resolve(); third.URL.String() != first.URL.String() {
		t.Errorf("a caller's change reached the cache: %s, want %s", third.URL, first.URL)
	}
	e.mustStore("github", "ghp_cached", "")
	asked = len(gh.Requests())
	resolve()
	if got := len(gh.Requests()); got == asked {
		t.Error("Remote after the tokens were stored again did not call the provider")
	}
}
