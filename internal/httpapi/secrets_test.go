package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentd/agentd/internal/customsecret"
)

// Plaintexts of custom secrets; each must never come back out.
const (
	apiTokenPlain  = "custom-API-token-PLAINTEXT-0101"
	deployKeyPlain = "custom-deploy-key-PLAINTEXT-0102"
	rotatedPlain   = "custom-rotated-PLAINTEXT-0103"
	bobTokenPlain  = "custom-bob-token-PLAINTEXT-0104"
)

type secretItem struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

type secretPage struct {
	Items      []secretItem `json:"items"`
	NextPageID *string      `json:"next_page_id"`
}

// storedSecretValue unseals the user's stored custom secret called name.
func (e *env) storedSecretValue(userID, name string) string {
	e.t.Helper()
	s, err := e.inspectStore().GetCustomSecret(context.Background(), userID, name)
	if err != nil {
		e.t.Fatalf("stored secret %s: %v", name, err)
	}
	plain, err := e.inspectKeyring().Open(s.ValueSealed)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(plain)
}

func TestCustomSecrets(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	bobID, bob := e.newUser("bob")
	rec := &bodyRecorder{e: e}
	search := func(key, query string) secretPage {
		t.Helper()
		var p secretPage
		if err := json.Unmarshal(rec.must("GET", "/api/v1/secrets/search"+query, key, nil, http.StatusOK), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	names := func(p secretPage) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, it.Name)
		}
		return out
	}

	wantMessage(t, rec.must("POST", "/api/v1/secrets", alice, map[string]any{
		"name": "API_TOKEN", "description": "the deploy API", "value": apiTokenPlain,
	}, http.StatusCreated), "Secret created successfully")
	wantMessage(t, rec.must("POST", "/api/v1/secrets", alice, map[string]any{
		"name": "DEPLOY_KEY", "value": deployKeyPlain,
	}, http.StatusCreated), "Secret created successfully")
	if got := e.storedSecretValue(aliceID, "API_TOKEN"); got != apiTokenPlain {
		t.Fatalf("stored value %q", got)
	}

	t.Run("bad input", func(t *testing.T) {
		rec := rec.in(t)
		for _, tc := range []struct {
			name string
			body any
			loc  []any
		}{
			{"name with a dash", map[string]any{"name": "MY-TOKEN", "value": apiTokenPlain}, []any{"body", "name"}},
			{"name with a space", map[string]any{"name": "MY TOKEN", "value": apiTokenPlain}, []any{"body", "name"}},
			{"name starting with a digit", map[string]any{"name": "9LIVES", "value": apiTokenPlain}, []any{"body", "name"}},
			{"reserved name", map[string]any{"name": "PS1", "value": apiTokenPlain}, []any{"body", "name"}},
			{"value too short to mask", map[string]any{"name": "PIN", "value": "1234"}, []any{"body", "value"}},
			{"no value", map[string]any{"name": "EMPTY"}, []any{"body", "value"}},
			{"no name", map[string]any{"value": apiTokenPlain}, []any{"body", "name"}},
			{"unknown field", map[string]any{"name": "X_Y", "value": apiTokenPlain, "secret": "x"}, []any{"body", "secret"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rec := rec.in(t)
				status, body := rec.call("POST", "/api/v1/secrets", alice, tc.body)
				wantProblem(t, status, body, "", tc.loc...)
			})
		}
	})

	t.Run("duplicate name", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		status, body := rec.call("POST", "/api/v1/secrets", alice, map[string]any{"name": "API_TOKEN", "value": rotatedPlain})
		if status != http.StatusConflict {
			t.Fatalf("duplicate: %d %s, want 409", status, body)
		}
		wantDetail(t, body, "already exists")
		if got := e.storedSecretValue(aliceID, "API_TOKEN"); got != apiTokenPlain {
			t.Fatalf("a refused duplicate changed the value to %q", got)
		}
	})

	t.Run("search lists names and descriptions", func(t *testing.T) {
		rec := rec.in(t)
		desc := "the deploy API"
		want := []secretItem{{Name: "API_TOKEN", Description: &desc}, {Name: "DEPLOY_KEY", Description: new(string)}}
		if p := search(alice, ""); !reflect.DeepEqual(p.Items, want) || p.NextPageID != nil {
			t.Fatalf("search: %+v", p)
		}
		first := search(alice, "?limit=1")
		if got := names(first); len(got) != 1 || got[0] != "API_TOKEN" || first.NextPageID == nil {
			t.Fatalf("first page: %+v", first)
		}
		second := search(alice, "?limit=1&page_id="+*first.NextPageID)
		if got := names(second); len(got) != 1 || got[0] != "DEPLOY_KEY" || second.NextPageID != nil {
			t.Fatalf("second page: %+v", second)
		}
		if got := names(search(alice, "?name__contains=deploy")); !reflect.DeepEqual(got, []string{"DEPLOY_KEY"}) {
			t.Fatalf("name__contains=deploy: %v", got)
		}
		status, body := rec.call("GET", "/api/v1/secrets/search?page_id=nonsense", alice, nil)
		wantProblem(t, status, body, "value_error", "query", "page_id")
		status, body = rec.call("GET", "/api/v1/secrets/search?limit=0", alice, nil)
		wantProblem(t, status, body, "", "query", "limit")
	})

	t.Run("another user's secrets are not found", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		if p := search(bob, ""); len(p.Items) != 0 {
			t.Fatalf("bob sees %+v", p.Items)
		}
		status, body := rec.call("PUT", "/api/v1/secrets/API_TOKEN", bob, map[string]any{"value": bobTokenPlain})
		if status != http.StatusNotFound {
			t.Fatalf("bob updates alice's secret: %d %s", status, body)
		}
		wantDetail(t, body, "Secret not found")
		if status, body := rec.call("DELETE", "/api/v1/secrets/API_TOKEN", bob, nil); status != http.StatusNotFound {
			t.Fatalf("bob deletes alice's secret: %d %s", status, body)
		}
		// The name is free for bob: names are unique per user.
		rec.must("POST", "/api/v1/secrets", bob, map[string]any{"name": "API_TOKEN", "value": bobTokenPlain}, http.StatusCreated)
		if got := e.storedSecretValue(aliceID, "API_TOKEN"); got != apiTokenPlain {
			t.Fatalf("alice's value became %q", got)
		}
		if got := e.storedSecretValue(bobID, "API_TOKEN"); got != bobTokenPlain {
			t.Fatalf("bob's value is %q", got)
		}
	})

	t.Run("update", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("PUT", "/api/v1/secrets/DEPLOY_KEY", alice, map[string]any{"value": rotatedPlain}, http.StatusOK),
			"Secret updated successfully")
		if got := e.storedSecretValue(aliceID, "DEPLOY_KEY"); got != rotatedPlain {
			t.Fatalf("value after update %q", got)
		}
		rec.must("PUT", "/api/v1/secrets/DEPLOY_KEY", alice, map[string]any{"name": "SSH_KEY", "description": "for the servers"}, http.StatusOK)
		desc, apiDesc := "for the servers", "the deploy API"
		if p := search(alice, ""); !reflect.DeepEqual(p.Items, []secretItem{{Name: "API_TOKEN", Description: &apiDesc}, {Name: "SSH_KEY", Description: &desc}}) {
			t.Fatalf("after the rename: %+v", p.Items)
		}
		if got := e.storedSecretValue(aliceID, "SSH_KEY"); got != rotatedPlain {
			t.Fatalf("the rename changed the value to %q", got)
		}

		status, body := rec.call("PUT", "/api/v1/secrets/DEPLOY_KEY", alice, map[string]any{"value": rotatedPlain})
		if status != http.StatusNotFound {
			t.Fatalf("update of the old name: %d %s, want 404", status, body)
		}
		status, body = rec.call("PUT", "/api/v1/secrets/SSH_KEY", alice, map[string]any{"name": "API_TOKEN"})
		if status != http.StatusConflict {
			t.Fatalf("rename onto a taken name: %d %s, want 409", status, body)
		}
		status, body = rec.call("PUT", "/api/v1/secrets/SSH_KEY", alice, map[string]any{"name": "SSH-KEY"})
		wantProblem(t, status, body, "value_error", "body", "name")
		status, body = rec.call("PUT", "/api/v1/secrets/SSH_KEY", alice, map[string]any{"value": "short"})
		wantProblem(t, status, body, "value_error", "body", "value")
		status, body = rec.call("PUT", "/api/v1/secrets/SSH_KEY", alice, map[string]any{})
		wantProblem(t, status, body, "value_error", "body")
	})

	t.Run("delete", func(t *testing.T) {
		rec := rec.in(t)
		wantMessage(t, rec.must("DELETE", "/api/v1/secrets/SSH_KEY", alice, nil, http.StatusOK), "Secret deleted successfully")
		status, body := rec.call("DELETE", "/api/v1/secrets/SSH_KEY", alice, nil)
		if status != http.StatusNotFound {
			t.Fatalf("second delete: %d %s, want 404", status, body)
		}
		if got := names(search(alice, "")); !reflect.DeepEqual(got, []string{"API_TOKEN"}) {
			t.Fatalf("after the delete: %v", got)
		}
	})

	t.Run("no key", func(t *testing.T) {
		e := e.in(t)
		if status, _ := e.call("GET", "/api/v1/secrets/search", "", nil); status != http.StatusUnauthorized {
			t.Fatalf("search without a key: %d", status)
		}
	})

	plains := []string{apiTokenPlain, deployKeyPlain, rotatedPlain, bobTokenPlain}
	rec.checkNone(t, plains)
	e.checkDataDirLacks(t, plains)
}

// TestCustomSecretLimit: a user keeps at most customsecret.MaxPerUser secrets; one more is a
// 409 that says so and stores nothing, and a delete makes room.
func TestCustomSecretLimit(t *testing.T) {
	e := newEnv(t)
	_, carol := e.newUser("carol")
	rec := &bodyRecorder{e: e}
	create := func(i int) (int, []byte) {
		return rec.call("POST", "/api/v1/secrets", carol, map[string]any{"name": fmt.Sprintf("SECRET_%03d", i), "value": fmt.Sprintf("value-of-secret-%03d", i)})
	}
	for i := range customsecret.MaxPerUser {
		if status, body := create(i); status != http.StatusCreated {
			t.Fatalf("secret %d of %d: %d %s", i+1, customsecret.MaxPerUser, status, body)
		}
	}
	status, body := create(customsecret.MaxPerUser)
	if status != http.StatusConflict {
		t.Fatalf("one secret past the limit: %d %s, want 409", status, body)
	}
	wantDetail(t, body, "as many as allowed")
	var p secretPage
	if err := json.Unmarshal(rec.must("GET", fmt.Sprintf("/api/v1/secrets/search?name__contains=SECRET_%03d", customsecret.MaxPerUser), carol, nil, http.StatusOK), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 0 {
		t.Fatalf("the refused secret was stored: %+v", p.Items)
	}
	rec.must("DELETE", "/api/v1/secrets/SECRET_000", carol, nil, http.StatusOK)
	if status, body := create(customsecret.MaxPerUser); status != http.StatusCreated {
		t.Fatalf("a secret after a delete made room: %d %s", status, body)
	}
}
