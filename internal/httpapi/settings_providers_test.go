package httpapi_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/wire"
)

// Plaintexts of provider tokens and other keys; each must never come back out.
const (
	githubTokenPlain  = "ghp_PLAINTEXTgithubTOKEN0001"
	githubToken2Plain = "ghp_PLAINTEXTgithubTOKEN0002"
	gitlabTokenPlain  = "glpat-PLAINTEXTgitlab0003"
	providerMCPPlain  = "mcp-from-providers-PLAINTEXT-0004"
	convMCPPlain      = "mcp-in-conversation-PLAINTEXT-0005"
	rejectedPlain     = "ghp_REJECTED-never-stored-0006"
)

// storedTokens unseals the user's stored provider tokens by provider.
func (e *env) storedTokens(userID string) map[string]gitprovider.Token {
	e.t.Helper()
	toks, err := e.inspectStore().ProviderTokens(context.Background(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]gitprovider.Token{}
	for _, tok := range toks {
		plain, err := e.inspectKeyring().Open(tok.TokenSealed)
		if err != nil {
			e.t.Fatal(err)
		}
		tok.TokenSealed = plain // the plaintext, for comparison
		out[tok.Provider] = tok
	}
	return out
}

func TestGitProviders(t *testing.T) {
	e := newEnv(t)
	var log syncLog
	e.restartLogged(&log)
	aliceID, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	rec := &bodyRecorder{e: e}
	// Two GitHub Enterprise hosts and the configured GitLab know the tokens.
	ghe, ghe2 := providertest.NewGitHub(t), providertest.NewGitHub(t)
	ghe.AddUser(githubTokenPlain, providertest.User{Login: "alice"})
	ghe2.AddUser(githubTokenPlain, providertest.User{Login: "alice"})
	e.providers["github"].AddUser(githubToken2Plain, providertest.User{Login: "alice"})
	e.providers["gitlab"].AddUser(gitlabTokenPlain, providertest.User{Login: "alice"})
	tokensSet := func(key string) any { return e.settingsJSON(key)["provider_tokens_set"] }
	checkTokens := func(t *testing.T, want map[string][2]string) { // provider → token, host
		t.Helper()
		got := map[string][2]string{}
		for p, tok := range e.storedTokens(aliceID) {
			got[p] = [2]string{string(tok.TokenSealed), tok.Host}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stored tokens %v, want %v", got, want)
		}
	}

	wantMessage(t, rec.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
		"github": map[string]any{"token": githubTokenPlain, "host": ghe.Root()},
		"gitlab": map[string]any{"token": gitlabTokenPlain},
	}}, http.StatusOK), "Git providers stored")
	checkTokens(t, map[string][2]string{"github": {githubTokenPlain, ghe.Root()}, "gitlab": {gitlabTokenPlain, ""}})

	t.Run("tokens alone are not settings", func(t *testing.T) {
		rec := rec.in(t)
		// Tokens are kept apart from settings (as in OpenHands, whose secrets store is separate):
		// with tokens but no settings, GET /api/settings still answers 404.
		status, body := rec.call("GET", "/api/settings", alice, nil)
		if status != http.StatusNotFound {
			t.Fatalf("GET /api/settings with only tokens: %d %s, want 404", status, body)
		}
	})

	rec.must("POST", "/api/settings", alice, map[string]any{"language": "en"}, http.StatusOK)
	t.Run("hosts shown, tokens not", func(t *testing.T) {
		want := map[string]any{"github": ghe.Root(), "gitlab": nil}
		if got := tokensSet(alice); !reflect.DeepEqual(got, want) {
			t.Errorf("provider_tokens_set %v, want %v", got, want)
		}
	})

	t.Run("empty token keeps the token and takes the new host", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		rec.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
			"github": map[string]any{"token": "", "host": ghe2.Root(), "user_id": "octocat"}}}, http.StatusOK)
		checkTokens(t, map[string][2]string{"github": {githubTokenPlain, ghe2.Root()}, "gitlab": {gitlabTokenPlain, ""}})
		if got := e.storedTokens(aliceID)["github"].ExternalUserID; got != "octocat" {
			t.Errorf("stored user_id %q, want octocat", got)
		}
		want := map[string]any{"github": ghe2.Root(), "gitlab": nil}
		if got := tokensSet(alice); !reflect.DeepEqual(got, want) {
			t.Errorf("provider_tokens_set %v, want %v", got, want)
		}
	})

	t.Run("a new token without host resets the host; others are kept", func(t *testing.T) {
		rec := rec.in(t)
		rec.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
			"github": map[string]any{"token": githubToken2Plain}}}, http.StatusOK)
		checkTokens(t, map[string][2]string{"github": {githubToken2Plain, ""}, "gitlab": {gitlabTokenPlain, ""}})
	})

	t.Run("an empty token with nothing stored stores nothing", func(t *testing.T) {
		rec := rec.in(t)
		rec.must("POST", "/api/add-git-providers", alice, map[string]any{"provider_tokens": map[string]any{
			"bitbucket": map[string]any{"token": "", "host": "bb.example"}}}, http.StatusOK)
		checkTokens(t, map[string][2]string{"github": {githubToken2Plain, ""}, "gitlab": {gitlabTokenPlain, ""}})
	})

	t.Run("other users never see them", func(t *testing.T) {
		rec := rec.in(t)
		rec.must("POST", "/api/settings", bob, map[string]any{"language": "en"}, http.StatusOK)
		if got := tokensSet(bob); !reflect.DeepEqual(got, map[string]any{}) {
			t.Errorf("bob's provider_tokens_set %v", got)
		}
	})

	t.Run("validation", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		before := e.dbRows()
		at := func(loc ...any) []any { return append([]any{"body"}, loc...) }
		p := func(typ, msg string, loc []any) wire.Problem { return wire.Problem{Type: typ, Loc: loc, Msg: msg} }
		enumMsg := "Input should be 'github', 'gitlab', 'bitbucket' or 'enterprise_sso'"
		for _, tc := range []struct {
			name, body string
			want       []wire.Problem
		}{
			// pydantic puts a bad dict key at [..., key, "[key]"].
			{"bad provider", `{"provider_tokens": {"svn": {"token": "` + rejectedPlain + `"}}}`, []wire.Problem{
				p("enum", enumMsg, at("provider_tokens", "svn", "[key]"))}},
			{"bad provider beside a good one", `{"provider_tokens": {"github": {"token": "` + rejectedPlain + `"}, "GitHub": {"token": "x"}}}`, []wire.Problem{
				p("enum", enumMsg, at("provider_tokens", "GitHub", "[key]"))}},
			{"token number", `{"provider_tokens": {"github": {"token": 42}}}`, []wire.Problem{
				p("string_type", "Input should be a valid string", at("provider_tokens", "github", "token"))}},
			{"token object", `{"provider_tokens": {"github": "` + rejectedPlain + `"}}`, []wire.Problem{
				p("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", at("provider_tokens", "github"))}},
			{"provider_tokens list", `{"provider_tokens": [{"github": {}}]}`, []wire.Problem{
				p("dict_type", "Input should be a valid dictionary", at("provider_tokens"))}},
			{"host number", `{"provider_tokens": {"gitlab": {"token": "` + rejectedPlain + `", "host": 1}}}`, []wire.Problem{
				p("string_type", "Input should be a valid string", at("provider_tokens", "gitlab", "host"))}},
			{"mcp_config bad url", `{"provider_tokens": {"github": {"token": "` + rejectedPlain + `"}}, "mcp_config": {"shttp_servers": ["localhost:3000"]}}`, []wire.Problem{
				p("value_error", "Value error, URL must include a valid domain/host", at("mcp_config", "shttp_servers", 0, "url"))}},
			{"mcp_config unknown key", `{"mcp_config": {"sse": []}}`, []wire.Problem{
				p("extra_forbidden", "Extra inputs are not permitted", at("mcp_config", "sse"))}},
			{"several problems", `{"mcp_config": {"stdio_servers": [{"name": "x y", "command": "a b"}]}, "provider_tokens": {"zz": {}, "aa": {}, "github": {"token": 1}}}`, []wire.Problem{
				p("value_error", "Value error, Server name can only contain letters, numbers, hyphens, and underscores", at("mcp_config", "stdio_servers", 0, "name")),
				p("value_error", "Value error, Command should be a single executable without spaces (use args for arguments)", at("mcp_config", "stdio_servers", 0, "command")),
				p("enum", enumMsg, at("provider_tokens", "aa", "[key]")),
				p("string_type", "Input should be a valid string", at("provider_tokens", "github", "token")),
				p("enum", enumMsg, at("provider_tokens", "zz", "[key]")),
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.in(t)
				rec := rec.in(t)
				status, body := rec.call("POST", "/api/add-git-providers", alice, tc.body)
				assertProblems(t, status, body, tc.want)
				checkDBUnchanged(t, before, e.dbRows())
			})
		}
	})

	t.Run("mcp_config becomes the user's MCP settings", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		rec.must("POST", "/api/add-git-providers", alice, map[string]any{
			"provider_tokens": map[string]any{},
			"mcp_config": map[string]any{"sse_servers": []any{map[string]any{"url": "https://tools.example/sse", "api_key": providerMCPPlain}},
				"stdio_servers": []any{map[string]any{"name": "git", "command": "uvx", "args": []string{"mcp-server-git"}}}},
		}, http.StatusOK)
		m := e.storedMCPConfig(aliceID)
		if m == nil || len(m.SSEServers) != 1 || m.SSEServers[0].APIKey == nil || *m.SSEServers[0].APIKey != providerMCPPlain || len(m.StdioServers) != 1 {
			t.Fatalf("stored MCP configuration %+v", m)
		}
		shown := e.settingsJSON(alice)["mcp_config"].(map[string]any)
		want := []any{map[string]any{"url": "https://tools.example/sse", "api_key": nil}}
		if !reflect.DeepEqual(shown["sse_servers"], want) {
			t.Errorf("GET shows sse_servers %v, want %v", shown["sse_servers"], want)
		}
		// The tokens were not touched by an empty provider_tokens.
		checkTokens(t, map[string][2]string{"github": {githubToken2Plain, ""}, "gitlab": {gitlabTokenPlain, ""}})
	})

	t.Run("mcp_config alone makes settings exist", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		_, carol := e.newUser("carol")
		rec.must("POST", "/api/add-git-providers", carol, map[string]any{"mcp_config": map[string]any{"sse_servers": []string{"https://c.example/sse"}}}, http.StatusOK)
		got := e.settingsJSON(carol)
		if got["provider_tokens_set"] == nil || got["mcp_config"] == nil {
			t.Errorf("carol's settings %v", got)
		}
	})

	t.Run("unset removes them all", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/unset-provider-tokens", alice, nil, http.StatusOK), "Unset Git provider tokens")
		checkTokens(t, map[string][2]string{})
		if got := tokensSet(alice); !reflect.DeepEqual(got, map[string]any{}) {
			t.Errorf("provider_tokens_set after unset %v, want {}", got)
		}
		// Settings and MCP configuration stay.
		if got := e.settingsJSON(alice); got["language"] != "en" || got["mcp_config"] == nil {
			t.Errorf("settings after unset %v", got)
		}
	})

	t.Run("secrets never come out", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		// A conversation whose MCP server has a key: the request is stored sealed.
		id := e.v0Create(alice, map[string]any{"initial_user_msg": "hi", "mcp_config": map[string]any{
			"shttp_servers": []any{map[string]any{"url": "https://conv.example/mcp", "api_key": convMCPPlain}}}})
		e.v0WaitStatus(alice, id, "RUNNING")
		for _, path := range []string{"/api/settings", "/api/conversations", "/api/conversations/" + id,
			"/api/v1/app-conversations?ids=" + id, "/api/v1/app-conversations/search", "/api/v1/app-conversations/start-tasks/search",
			"/api/v1/sandboxes/search", "/api/keys", "/api/v1/users/me"} {
			rec.must("GET", path, alice, nil, http.StatusOK)
		}
		secrets := []string{githubTokenPlain, githubToken2Plain, gitlabTokenPlain, providerMCPPlain, convMCPPlain, rejectedPlain}
		rec.checkNone(t, secrets)
		e.checkDataDirLacks(t, secrets)
		logged := log.String()
		if !strings.Contains(logged, "/api/add-git-providers") {
			t.Fatalf("the server log has no request lines; is the logger wired? log: %q", logged)
		}
		for _, s := range secrets {
			if strings.Contains(logged, s) {
				t.Errorf("the server log holds the secret %q", s)
			}
		}
	})
}
