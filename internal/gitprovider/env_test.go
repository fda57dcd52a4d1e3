package gitprovider_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// env is a Service on a real store and keyring that reaches loopback providers through the
// URL policy, as agentd serve does for a user the administrator lets reach loopback.
type env struct {
	t      *testing.T
	svc    *gitprovider.Service
	db     *sqlite.Store
	userID string
	// plainHTTP is what the policy says of plain http hosts.
	plainHTTP bool
}

// in returns the view of the env for t, a subtest of the env's test: the same service and
// store, with failures reported to t.
func (e *env) in(t *testing.T) *env {
	v := *e
	v.t = t
	return &v
}

type envOptions struct {
	endpoints gitprovider.Endpoints
	// allow is the URL policy's allow-list; nil admits loopback.
	allow []string
	// denyPlainHTTP refuses plain http to users' hosts.
	denyPlainHTTP bool
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
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
	if o.allow == nil {
		o.allow = []string{"127.0.0.0/8"}
	}
	policy, err := netpolicy.New(o.allow)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: st, plainHTTP: !o.denyPlainHTTP}
	e.svc = gitprovider.NewService(st, kr, gitprovider.Options{
		Endpoints: o.endpoints,
		Client: func(context.Context, string) (*http.Client, error) {
			return policy.Client(false), nil
		},
		PlainHTTP: func(context.Context, string, string) (bool, error) { return e.plainHTTP, nil },
	})
	u := auth.User{ID: "user-1", Name: "alice"}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	e.userID = u.ID
	return e
}

// store stores one token and returns the error of the check.
func (e *env) store(provider, token, host string) error {
	e.t.Helper()
	in := gitprovider.TokenInput{Provider: provider, Token: token}
	if host != "" {
		in.Host = &host
	}
	return e.svc.Store(context.Background(), e.userID, []gitprovider.TokenInput{in})
}

func (e *env) mustStore(provider, token, host string) {
	e.t.Helper()
	if err := e.store(provider, token, host); err != nil {
		e.t.Fatalf("store %s token: %v", provider, err)
	}
}

// stored lists the providers the user has tokens for.
func (e *env) stored() []string {
	e.t.Helper()
	toks, err := e.db.ProviderTokens(context.Background(), e.userID)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, t := range toks {
		out = append(out, t.Provider)
	}
	return out
}

// wantKind fails unless err is a *gitprovider.Error of kind, whose texts hold none of the
// secrets.
func wantKind(t *testing.T, err, kind error, secrets ...string) *gitprovider.Error {
	t.Helper()
	var ge *gitprovider.Error
	if !errors.As(err, &ge) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want a *gitprovider.Error of kind %v", err, err, kind)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) || strings.Contains(ge.ClientMessage(), s) {
			t.Errorf("the error holds a secret: %v", err)
		}
	}
	return ge
}

// providerFixture is what the suite puts at every provider: the user, repositories with
// branches, an assigned issue and four open pull requests, one for each kind of attention.
type providerFixture struct {
	login, email string
	repo         string // team/app
	secret       string // a private repository of someone else
	issue        int
	pulls        map[string]int // conflicts, failing, commented, clean → number
}

func addFixture(s *providertest.Server, token, repoPrefix string) providerFixture {
	f := providerFixture{login: "octo", email: "octo@example.com", repo: repoPrefix + "/app", secret: repoPrefix + "/secret", pulls: map[string]int{}}
	s.AddUser(token, providertest.User{Login: f.login, Email: f.email, Company: "Octo Corp"})
	s.AddUser("other-token-0000", providertest.User{Login: "someone"})
	s.AddRepo(providertest.Repo{FullName: f.repo, Branches: []string{"dev", "feature-x", "fix-1", "fix-2", "fix-3", "fix-4"}, Organization: true, Stars: 7})
	s.AddRepo(providertest.Repo{FullName: repoPrefix + "/tools"})
	s.AddRepo(providertest.Repo{FullName: f.secret, Private: true, Members: []string{"someone"}})
	f.issue = s.AddIssue(providertest.Issue{Repo: f.repo, Title: "Crash on start", Body: "It crashes.", Author: "someone",
		Assignees: []string{f.login}, Comments: []providertest.Comment{{Author: "someone", Body: "Still crashes on 1.2"}}})
	f.pulls["conflicts"] = s.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Conflicting", Author: f.login, Head: "fix-1", Base: "main", Conflicts: true})
	f.pulls["failing"] = s.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Failing", Author: f.login, Head: "fix-2", Base: "main",
		Checks: []providertest.Check{{Name: "build", State: "success"}, {Name: "test", State: "failure"}}})
	f.pulls["commented"] = s.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Reviewed", Author: f.login, Head: "fix-3", Base: "main",
		Reviews:  []providertest.Review{{Author: "someone", State: "changes_requested", Body: "Please rename"}},
		Comments: []providertest.Comment{{Author: "someone", Body: "rename this", Path: "main.go", Line: 3}}})
	f.pulls["clean"] = s.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Clean", Author: f.login, Head: "fix-4", Base: "main",
		Checks:   []providertest.Check{{Name: "test", State: "success"}},
		Reviews:  []providertest.Review{{Author: "someone", State: "approved"}},
		Comments: []providertest.Comment{{Author: "someone", Body: "nit", Path: "a.go", Line: 1, Resolved: true}, {Author: "someone", Body: "LGTM"}}})
	// Someone else's pull request is never the user's task.
	s.AddPullRequest(providertest.PullRequest{Repo: f.repo, Title: "Not mine", Author: "someone", Head: "dev", Base: "main", Conflicts: true})
	return f
}
