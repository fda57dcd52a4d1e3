package gitprovider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/netpolicy"
)

// TestEnterpriseDetection: an enterprise_sso host's API family is found by probing once and
// remembered; a host that speaks none of the APIs, or none at all, is refused.
func TestEnterpriseDetection(t *testing.T) {
	ctx := context.Background()
	count := func(srv *providertest.Server, req string) int {
		n := 0
		for _, r := range srv.Requests() {
			if r == req {
				n++
			}
		}
		return n
	}
	t.Run("remembered", func(t *testing.T) {
		gl := providertest.NewGitLab(t)
		gl.AddUser("glpat-ent", providertest.User{Login: "octo"})
		e := newEnv(t, envOptions{})
		e.mustStore("enterprise_sso", "glpat-ent", gl.Root())
		for range 3 {
			api, err := e.svc.API(ctx, e.userID, "enterprise_sso")
			if err != nil || api.Family() != gitprovider.FamilyGitLab {
				t.Fatalf("API: %v, %v", api, err)
			}
		}
		// GitHub's resource first (absent here), then GitLab's: once each, at the check.
		if n, m := count(gl, "GET /api/v3/meta"), count(gl, "GET /api/v4/version"); n != 1 || m != 1 {
			t.Errorf("probes: meta %d, version %d; want 1 each", n, m)
		}
	})
	t.Run("a bad token at a detected host is refused, not unknown", func(t *testing.T) {
		gl := providertest.NewGitLab(t)
		e := newEnv(t, envOptions{})
		err := e.store("enterprise_sso", "glpat-wrong", gl.Root())
		ge := wantKind(t, err, gitprovider.ErrTokenRefused, "glpat-wrong")
		if !strings.Contains(ge.ClientMessage(), "enterprise_sso") {
			t.Errorf("message %q does not name enterprise_sso", ge.ClientMessage())
		}
	})
	t.Run("no API", func(t *testing.T) {
		other := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(other.Close)
		e := newEnv(t, envOptions{})
		err := e.store("enterprise_sso", "tok-none", other.URL)
		ge := wantKind(t, err, gitprovider.ErrBadHost, "tok-none")
		if !strings.Contains(ge.ClientMessage(), "none of") {
			t.Errorf("message %q", ge.ClientMessage())
		}
		if len(e.stored()) != 0 {
			t.Errorf("stored %v", e.stored())
		}
	})
	t.Run("host required", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		ge := wantKind(t, e.store("enterprise_sso", "tok-nohost", ""), gitprovider.ErrBadHost)
		if !strings.Contains(ge.ClientMessage(), "host") {
			t.Errorf("message %q", ge.ClientMessage())
		}
	})
}

// TestHosts: what a user may give as a host, and how the URL policy bounds it.
func TestHosts(t *testing.T) {
	gh := providertest.NewGitHub(t)
	gh.AddUser("ghp_hosts", providertest.User{Login: "octo"})
	t.Run("malformed", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		for _, h := range []string{"ftp://git.example", "https://user:pw@git.example", "https://git.example/?q=1", "http://"} {
			wantKind(t, e.store("github", "ghp_hosts", h), gitprovider.ErrBadHost, "ghp_hosts", "pw")
		}
	})
	t.Run("too long", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		ge := wantKind(t, e.store("enterprise_sso", "tok-long", gh.Root()+"/"+strings.Repeat("a", 3000)), gitprovider.ErrBadHost, "tok-long")
		if !strings.Contains(ge.ClientMessage(), "at most 2048") {
			t.Errorf("message %q does not say how long a host may be", ge.ClientMessage())
		}
		if len(e.stored()) != 0 {
			t.Errorf("stored %v", e.stored())
		}
	})
	t.Run("plain http only where the policy admits the host", func(t *testing.T) {
		e := newEnv(t, envOptions{denyPlainHTTP: true})
		ge := wantKind(t, e.store("github", "ghp_hosts", gh.Root()), gitprovider.ErrBadHost, "ghp_hosts")
		if !strings.Contains(ge.ClientMessage(), "plain http") {
			t.Errorf("message %q", ge.ClientMessage())
		}
		if len(e.stored()) != 0 || slices.Contains(gh.Requests(), "GET /api/v3/user") {
			t.Errorf("the token went out over plain http: stored %v, requests %v", e.stored(), gh.Requests())
		}
	})
	t.Run("internal addresses refused by the URL policy", func(t *testing.T) {
		e := newEnv(t, envOptions{allow: []string{}})
		err := e.store("github", "ghp_hosts", gh.Root())
		ge := wantKind(t, err, gitprovider.ErrBadHost, "ghp_hosts")
		var refused *netpolicy.RefusedError
		if !errors.As(err, &refused) || !strings.Contains(ge.ClientMessage(), "loopback") {
			t.Errorf("error %v: want the policy's refusal naming the rule", err)
		}
	})
	t.Run("the public host means the configured API", func(t *testing.T) {
		e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitHub: gh.APIURL()}})
		e.mustStore("github", "ghp_hosts", "github.com")
	})
}

// TestProviderFailures: a provider that fails or cannot be reached is ErrUnavailable.
func TestProviderFailures(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	notAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>hello</html>"))
	}))
	t.Cleanup(notAPI.Close)
	for name, url := range map[string]string{"5xx": broken.URL, "down": gone.URL, "not JSON": notAPI.URL} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOptions{endpoints: gitprovider.Endpoints{GitLab: url + "/api/v4"}})
			wantKind(t, e.store("gitlab", "glpat-fail", ""), gitprovider.ErrUnavailable, "glpat-fail")
		})
	}
}
