package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// currentUserJSON is GET /api/v1/users/me as OpenHands' clients read it: settings and id.
type currentUserJSON struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	IsAdmin       bool   `json:"is_admin"`
	CreatedAt     string `json:"created_at"`
	AgentSettings struct {
		Agent string `json:"agent"`
		LLM   struct {
			Model   *string `json:"model"`
			BaseURL *string `json:"base_url"`
			APIKey  *string `json:"api_key"`
		} `json:"llm"`
	} `json:"agent_settings"`
	ConversationSettings struct {
		MaxIterations *int `json:"max_iterations"`
	} `json:"conversation_settings"`
	SearchAPIKey      *string            `json:"search_api_key"`
	LLMAPIKeySet      bool               `json:"llm_api_key_set"`
	SearchAPIKeySet   bool               `json:"search_api_key_set"`
	ProviderTokensSet map[string]*string `json:"provider_tokens_set"`
}

func TestUsersMeSettings(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")

	// Before any settings are saved, the user has the defaults.
	var fresh currentUserJSON
	e.must("GET", "/api/v1/users/me", alice, nil, http.StatusOK, &fresh)
	if fresh.ID != aliceID || fresh.Name != "alice" || fresh.AgentSettings.Agent == "" || fresh.LLMAPIKeySet {
		t.Fatalf("/me before settings: %+v", fresh)
	}

	const llmKey, searchKey = "sk-alice-llm-secret", "tvly-alice-search-secret"
	e.must("POST", "/api/v1/settings", alice, map[string]any{
		"search_api_key": searchKey,
		"agent_settings_diff": map[string]any{"llm": map[string]any{
			"model": "openai/gpt-4o", "base_url": "https://llm.example.com/v1", "api_key": llmKey}},
		"conversation_settings_diff": map[string]any{"max_iterations": 40},
	}, http.StatusOK, nil)

	var me currentUserJSON
	body := e.must("GET", "/api/v1/users/me", alice, nil, http.StatusOK, &me)
	if me.ID != aliceID || me.Name != "alice" || me.IsAdmin || me.CreatedAt == "" {
		t.Fatalf("/me user fields: %+v", me)
	}
	if m := me.AgentSettings.LLM.Model; m == nil || *m != "openai/gpt-4o" || me.ConversationSettings.MaxIterations == nil || *me.ConversationSettings.MaxIterations != 40 {
		t.Fatalf("/me settings: %s", body)
	}
	if !me.LLMAPIKeySet || !me.SearchAPIKeySet || me.AgentSettings.LLM.APIKey != nil || me.SearchAPIKey != nil {
		t.Fatalf("/me secrets not masked: %s", body)
	}
	noSecret := func(what string, body []byte) {
		t.Helper()
		if strings.Contains(string(body), llmKey) || strings.Contains(string(body), searchKey) {
			t.Fatalf("%s shows a stored secret: %s", what, body)
		}
	}
	noSecret("/me", body)

	_, bob := e.newUser("bob")
	aliceSandbox, bobSandbox := e.runningSandbox(alice), e.runningSandbox(bob)
	aliceSession, bobSession := e.sessionKey(alice, aliceSandbox), e.sessionKey(bob, bobSandbox)
	exposed := e.srv.URL + "/api/v1/users/me?expose_secrets=true"

	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		detail string
	}{
		{"user key alone", http.Header{"X-Session-API-Key": {alice}}, 403, "not the session key of a sandbox"},
		{"user key as bearer alone", http.Header{"Authorization": {"Bearer " + alice}}, 403, "needs X-Session-API-Key"},
		{"wrong session key", http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {"nope"}}, 403, "not the session key of a sandbox"},
		{"another user's sandbox", http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {bobSession}}, 403, "another user's sandbox"},
		{"session key alone", http.Header{"X-Session-API-Key": {aliceSession}}, 401, "Unauthorized"},
		{"wrong user key", http.Header{"Authorization": {"Bearer nope"}, "X-Session-API-Key": {aliceSession}}, 401, "Unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.callAt("GET", exposed, tc.header, nil)
			noSecret(tc.name, body)
			var d struct {
				Detail string `json:"detail"`
			}
			if status != tc.status || json.Unmarshal(body, &d) != nil || !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("status %d, body %s; want %d with a detail containing %q", status, body, tc.status, tc.detail)
			}
		})
	}

	t.Run("own sandbox's session key", func(t *testing.T) {
		e := e.in(t)
		status, body := e.callAt("GET", exposed, http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {aliceSession}}, nil)
		var me currentUserJSON
		if status != http.StatusOK || json.Unmarshal(body, &me) != nil {
			t.Fatalf("status %d, body %s", status, body)
		}
		if k := me.AgentSettings.LLM.APIKey; k == nil || *k != llmKey {
			t.Fatalf("llm api_key %v, want the stored key", k)
		}
		if k := me.SearchAPIKey; k == nil || *k != searchKey {
			t.Fatalf("search_api_key %v, want the stored key", k)
		}
		if me.ID != aliceID {
			t.Fatalf("id %q, want %q", me.ID, aliceID)
		}
		// OpenHands' SDK reads the LLM at the top level; the nested shape stays.
		var top struct {
			LLMModel   *string `json:"llm_model"`
			LLMBaseURL *string `json:"llm_base_url"`
			LLMAPIKey  *string `json:"llm_api_key"`
		}
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatal(err)
		}
		if strOrNil(top.LLMModel) != "openai/gpt-4o" || strOrNil(top.LLMBaseURL) != "https://llm.example.com/v1" || strOrNil(top.LLMAPIKey) != llmKey {
			t.Fatalf("top-level LLM settings: %s", body)
		}
	})

	t.Run("expose_secrets=false masks", func(t *testing.T) {
		e := e.in(t)
		status, body := e.callAt("GET", e.srv.URL+"/api/v1/users/me?expose_secrets=false",
			http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {aliceSession}}, nil)
		if status != http.StatusOK {
			t.Fatalf("status %d, body %s", status, body)
		}
		noSecret("expose_secrets=false", body)
		if keys := keysOf(t, body); slices.Contains(keys, "llm_api_key") || slices.Contains(keys, "llm_model") {
			t.Fatalf("the top-level LLM settings without expose_secrets: %s", body)
		}
	})
}

// sessionKey is the session key the API hands out for a RUNNING sandbox.
func (e *env) sessionKey(key, id string) string {
	e.t.Helper()
	sb := e.getSandbox(key, id)
	if sb == nil || sb.SessionAPIKey == nil || *sb.SessionAPIKey == "" {
		e.t.Fatalf("sandbox %s has no session key: %+v", id, sb)
	}
	return *sb.SessionAPIKey
}
