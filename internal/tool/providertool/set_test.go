package providertool_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/tool"
	"github.com/agentd/agentd/internal/tool/providertool"
)

// fixture is one provider's double with a user whose token agentd stored, a repository with
// an issue and a pull request that needs attention, and the tools for that repository.
type fixture struct {
	srv    *providertest.Server
	token  string
	repo   string
	issue  int
	pull   int
	set    *providertool.Set
	mu     sync.Mutex
	opened []int
}

func newFixture(t *testing.T, provider string) *fixture {
	t.Helper()
	ctx := context.Background()
	var srv *providertest.Server
	var ep gitprovider.Endpoints
	switch provider {
	case gitprovider.GitHub:
		srv = providertest.NewGitHub(t)
		ep.GitHub = srv.APIURL()
	case gitprovider.GitLab:
		srv = providertest.NewGitLab(t)
		ep.GitLab = srv.APIURL()
	case gitprovider.Bitbucket:
		srv = providertest.NewBitbucket(t)
		ep.Bitbucket = srv.APIURL()
	}
	dir := t.TempDir()
	kr, err := secret.LoadOrCreate(filepath.Join(dir, "keyring.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	policy, err := netpolicy.New([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	svc := gitprovider.NewService(st, kr, gitprovider.Options{Endpoints: ep,
		Client: func(context.Context, string) (*http.Client, error) { return policy.Client(false), nil }})
	if err := st.CreateUser(ctx, auth.User{ID: "user-1", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, token: provider + "-secret-token-4242", repo: "team/app"}
	srv.AddUser(f.token, providertest.User{Login: "octo", Email: "octo@example.com"})
	srv.AddRepo(providertest.Repo{FullName: f.repo, Branches: []string{"feature"}, Private: true, Members: []string{"octo"}})
	srv.AddRepo(providertest.Repo{FullName: "team/other"})
	f.issue = srv.AddIssue(providertest.Issue{Repo: f.repo, Title: "Crash on start", Body: "It crashes when the config is empty.",
		Author: "someone", Comments: []providertest.Comment{{Author: "someone", Body: "Still crashes on 1.2"}}})
	f.pull = srv.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Handle empty config", Body: "Fixes the crash.",
		Author: "octo", Head: "fix-config", Base: "main", Conflicts: true,
		Checks:   []providertest.Check{{Name: "unit-tests", State: "failure"}},
		Reviews:  []providertest.Review{{Author: "carol", State: "changes_requested", Body: "Please add a test."}},
		Comments: []providertest.Comment{{Author: "carol", Body: "This returns nil twice.", Path: "config.go", Line: 12}}})
	if err := svc.Store(ctx, "user-1", []gitprovider.TokenInput{{Provider: provider, Token: f.token}}); err != nil {
		t.Fatal(err)
	}
	api, err := svc.API(ctx, "user-1", provider)
	if err != nil {
		t.Fatal(err)
	}
	f.set, err = providertool.New(providertool.Options{
		Provider: provider, Family: api.Family(), Repository: f.repo,
		API: func(ctx context.Context) (gitprovider.API, error) { return svc.API(ctx, "user-1", provider) },
		Opened: func(_ context.Context, n int) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.opened = append(f.opened, n)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run calls a tool and checks what every result must be: an observation of the tool's
// kind, with the model's text as its content, and no token anywhere.
func (f *fixture) run(t *testing.T, name string, args any) (tool.Result, providertool.Observation) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := f.set.Run(context.Background(), name, b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var obs providertool.Observation
	if err := json.Unmarshal(res.Observation, &obs); err != nil {
		t.Fatalf("%s: observation %s: %v", name, res.Observation, err)
	}
	if obs.Kind != providertool.Kind || obs.IsError != res.IsError || len(obs.Content) != 1 || obs.Content[0].Text != res.Text {
		t.Errorf("%s: observation %s does not match the result %+v", name, res.Observation, res)
	}
	if strings.Contains(res.Text, f.token) || strings.Contains(string(res.Observation), f.token) {
		t.Errorf("%s: the token is in the result: %s", name, res.Observation)
	}
	return res, obs
}

func wantIn(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, text)
		}
	}
}

func TestProviderTools(t *testing.T) {
	for _, tc := range []struct {
		provider           string
		read, create, word string
		// review is what the provider's API tells of carol's review: GitLab's has approvals
		// only, Bitbucket Cloud's a verdict without words.
		review []string
	}{
		{gitprovider.GitHub, "read_pull_request", "create_pull_request", "Pull request #", []string{"carol: changes requested: Please add a test."}},
		{gitprovider.GitLab, "read_merge_request", "create_merge_request", "Merge request !", nil},
		{gitprovider.Bitbucket, "read_pull_request", "create_pull_request", "Pull request #", []string{"carol: changes requested"}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			f := newFixture(t, tc.provider)
			var names []string
			for _, tl := range f.set.Tools() {
				names = append(names, tl.Name)
				if tl.Place != tool.ControlPlane || !strings.Contains(tl.Description, f.repo) {
					t.Errorf("tool %s: place %v, description %q", tl.Name, tl.Place, tl.Description)
				}
			}
			if want := []string{"read_issue", tc.read, tc.create}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}

			t.Run("read issue", func(t *testing.T) {
				res, obs := f.run(t, "read_issue", map[string]any{"number": f.issue})
				if res.IsError || obs.Number != f.issue {
					t.Fatalf("read_issue: %+v", res)
				}
				wantIn(t, "the issue", res.Text, "Crash on start", "It crashes when the config is empty.", "Still crashes on 1.2", "someone")
			})

			t.Run("read pull request", func(t *testing.T) {
				res, _ := f.run(t, tc.read, map[string]any{"number": f.pull, "repository": "TEAM/app"})
				if res.IsError {
					t.Fatalf("%s: %s", tc.read, res.Text)
				}
				wantIn(t, "the "+tc.read, res.Text, tc.word, "Handle empty config", "Fixes the crash.", "fix-config into main",
					"merge conflicts", "unit-tests: failure", "carol on config.go:12", "This returns nil twice.")
				wantIn(t, "the "+tc.read, res.Text, tc.review...)
			})

			t.Run("open pull request", func(t *testing.T) {
				res, obs := f.run(t, tc.create, map[string]any{"title": "Fix the crash", "body": "Closes the issue.", "head": "feature"})
				if res.IsError || obs.Number == 0 {
					t.Fatalf("%s: %s", tc.create, res.Text)
				}
				created := f.srv.Created()
				if len(created) != 1 || created[0].Head != "feature" || created[0].Base != "main" || created[0].Title != "Fix the crash" {
					t.Fatalf("opened at the provider: %+v; want feature into the default branch main", created)
				}
				if created[0].Number != obs.Number || !slices.Equal(f.opened, []int{obs.Number}) {
					t.Fatalf("opened %d, recorded %v, observed %d", created[0].Number, f.opened, obs.Number)
				}
				wantIn(t, "the answer", res.Text, "Opened", "Fix the crash")
			})

			t.Run("another repository", func(t *testing.T) {
				before := len(f.srv.Requests())
				for _, call := range []struct {
					name string
					args map[string]any
				}{
					{"read_issue", map[string]any{"number": 1, "repository": "team/other"}},
					{tc.read, map[string]any{"number": 1, "repository": "https://example.com/team/other.git"}},
					{tc.create, map[string]any{"title": "x", "head": "feature", "repository": "team/other"}},
					{tc.create, map[string]any{"title": "x", "head": "feature", "repository": "../../etc"}},
				} {
					res, _ := f.run(t, call.name, call.args)
					if !res.IsError || !strings.Contains(res.Text, "works on the repository team/app only") {
						t.Errorf("%s on %v: %+v, want an error saying the conversation works on team/app only", call.name, call.args["repository"], res)
					}
				}
				if after := f.srv.Requests(); len(after) != before {
					t.Errorf("a refused call reached the provider: %v", after[before:])
				}
			})

			t.Run("not found", func(t *testing.T) {
				res, _ := f.run(t, "read_issue", map[string]any{"number": 999})
				if !res.IsError || !strings.Contains(res.Text, "Could not read issue") {
					t.Fatalf("missing issue: %+v", res)
				}
			})

			t.Run("bad arguments", func(t *testing.T) {
				res, _ := f.run(t, tc.create, map[string]any{"title": "x"})
				if !res.IsError || !strings.Contains(res.Text, "head") {
					t.Fatalf("create without head: %+v", res)
				}
			})

			t.Run("provider down", func(t *testing.T) {
				f.srv.Fail(http.StatusServiceUnavailable)
				res, _ := f.run(t, tc.read, map[string]any{"number": f.pull})
				if !res.IsError || !strings.Contains(res.Text, "Could not read") {
					t.Fatalf("provider down: %+v, want an error result", res)
				}
				f.srv.Fail(0)
				if res, _ := f.run(t, tc.read, map[string]any{"number": f.pull}); res.IsError {
					t.Fatalf("provider back: %s", res.Text)
				}
			})
		})
	}
}

func TestWords(t *testing.T) {
	for family, want := range map[string]string{
		gitprovider.FamilyGitHub: "pull request", gitprovider.FamilyGitLab: "merge request",
		gitprovider.FamilyBitbucket: "pull request", gitprovider.FamilyBitbucketDC: "pull request",
	} {
		if got := providertool.WordsFor(family).Request; got != want {
			t.Errorf("%s: %q, want %q", family, got, want)
		}
	}
	// Bitbucket Data Center leaves issues to Jira: no issue tool.
	set, err := providertool.New(providertool.Options{Provider: gitprovider.EnterpriseSSO, Family: gitprovider.FamilyBitbucketDC, Repository: "PROJ/app"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Lookup(providertool.ReadIssueTool); ok {
		t.Error("Bitbucket Data Center has a read_issue tool")
	}
}

func TestRenderBounds(t *testing.T) {
	long := strings.Repeat("word ", 20_000)
	text := providertool.IssueText(gitprovider.Issue{Number: 1, Repository: "a/b", Title: "t", Body: long, URL: "https://example.com/a/b/issues/1",
		Comments: []gitprovider.Comment{{Author: "x", Body: long}, {Author: "y", Body: long}, {Author: "z", Body: long}, {Author: "w", Body: long}}})
	if len(text) > 31_000 || !strings.Contains(text, "https://example.com/a/b/issues/1") {
		t.Fatalf("a long issue renders to %d characters, ending %q", len(text), text[len(text)-200:])
	}
}
