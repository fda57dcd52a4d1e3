package storetest

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store"
)

func testSettings(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSettings(ctx, ownerA)
	is(t, "get settings never put", err, settings.ErrNotFound)

	r := newSettings(ownerA, 1)
	r.Secrets["search_api_key"] = []byte{0, 1, 2, 255}
	ok(t, "put settings", s.PutSettings(ctx, r))
	got, err := s.GetSettings(ctx, ownerA)
	ok(t, "get settings", err)
	equal(t, "settings", got, r)

	r2 := settings.Record{UserID: ownerA, Values: json.RawMessage(`{"language": "fr"}`), UpdatedAt: at(2)}
	ok(t, "replace settings", s.PutSettings(ctx, r2))
	got, err = s.GetSettings(ctx, ownerA)
	ok(t, "get replaced settings", err)
	equal(t, "replaced settings", got, r2)

	_, err = s.GetSettings(ctx, ownerB)
	is(t, "B's settings", err, settings.ErrNotFound)
}

func testProviderTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	tokens := func(owner string) []gitprovider.Token {
		t.Helper()
		ts, err := s.ProviderTokens(ctx, owner)
		ok(t, "provider tokens of "+owner, err)
		return ts
	}
	if ts := tokens(ownerA); len(ts) != 0 {
		t.Fatalf("tokens of a new user: %d, want none", len(ts))
	}

	gitlab := gitprovider.Token{Provider: gitprovider.GitLab, TokenSealed: []byte("sealed gl"), Host: "gitlab.example.com", UpdatedAt: at(1)}
	github := gitprovider.Token{Provider: gitprovider.GitHub, TokenSealed: []byte("sealed gh"), ExternalUserID: "1234", UpdatedAt: at(2)}
	bitbucket := gitprovider.Token{Provider: gitprovider.Bitbucket, TokenSealed: []byte("sealed bb"), UpdatedAt: at(3)}
	ok(t, "replace A's tokens", s.ReplaceProviderTokens(ctx, ownerA, []gitprovider.Token{gitlab, github}))
	ok(t, "replace B's tokens", s.ReplaceProviderTokens(ctx, ownerB, []gitprovider.Token{bitbucket}))
	equal(t, "A's tokens, by provider", tokens(ownerA), []gitprovider.Token{github, gitlab})

	ok(t, "replace A's tokens again", s.ReplaceProviderTokens(ctx, ownerA, []gitprovider.Token{bitbucket}))
	equal(t, "A's replaced tokens", tokens(ownerA), []gitprovider.Token{bitbucket})

	fails(t, "replace with one provider twice",
		s.ReplaceProviderTokens(ctx, ownerA, []gitprovider.Token{github, gitlab, github}))
	equal(t, "A's tokens after a failed replace", tokens(ownerA), []gitprovider.Token{bitbucket})

	ok(t, "replace A's tokens with none", s.ReplaceProviderTokens(ctx, ownerA, nil))
	if ts := tokens(ownerA); len(ts) != 0 {
		t.Fatalf("tokens after replacing with none: %d, want none", len(ts))
	}
	equal(t, "B's tokens", tokens(ownerB), []gitprovider.Token{bitbucket})
}
