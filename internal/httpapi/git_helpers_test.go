package httpapi_test

import (
	"fmt"
	"net/http"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
)

// providerUser registers a new account at the provider's double and returns its token (not
// yet stored at agentd).
func (e *env) providerUser(provider, login string) string {
	e.t.Helper()
	token := fmt.Sprintf("%s-token-of-%s-%d", provider, login, len(e.tokens))
	e.providers[provider].AddUser(token, providertest.User{Login: login, Email: login + "@example.com"})
	return token
}

// token returns the provider token of the user with the API key, registering and storing one
// the first time.
func (e *env) token(key, provider string) string {
	e.t.Helper()
	if tok, ok := e.tokens[[2]string{key, provider}]; ok {
		return tok
	}
	return e.storeToken(key, provider, fmt.Sprintf("user%d", len(e.tokens)))
}

// storeToken registers login at the provider's double and stores its token for the user
// with the API key, in place of any they had.
func (e *env) storeToken(key, provider, login string) string {
	e.t.Helper()
	tok := e.providerUser(provider, login)
	e.must("POST", "/api/add-git-providers", key, map[string]any{"provider_tokens": map[string]any{provider: map[string]any{"token": tok}}}, http.StatusOK, nil)
	e.tokens[[2]string{key, provider}] = tok
	return tok
}

// repo makes a repository at the provider that the user with the API key reaches with a
// stored token.
func (e *env) repo(key, provider, name string) {
	e.t.Helper()
	e.token(key, provider)
	if !e.repos[provider+"/"+name] {
		e.repos[provider+"/"+name] = true
		e.providers[provider].AddRepo(providertest.Repo{FullName: name})
	}
}
