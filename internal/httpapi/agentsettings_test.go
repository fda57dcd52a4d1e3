package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAgentServerSettings follows the SDK's RemoteWorkspace reading its agent server's
// settings and secrets (get_llm, get_secrets and the LookupSecret each secret becomes): the
// owner's settings with their secrets shown only beside the owner's own key, and the secrets
// the sandbox's conversations were given.
func TestAgentServerSettings(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	const llmKey, token = "sk-alice-llm-0123456789", "tok-alice-0123456789"
	e.must("POST", "/api/v1/settings", alice, map[string]any{"git_user_name": "Alice",
		"agent_settings_diff": map[string]any{"llm": map[string]any{"model": "openai/gpt-4o", "api_key": llmKey}}}, http.StatusOK, nil)
	c := e.startAgent(alice, map[string]any{"initial_message": message("hello", false), "secrets": map[string]any{"MY_TOKEN": token}})
	host, _, _ := strings.Cut(c.url, "/api/conversations/")
	session := http.Header{"X-Session-API-Key": {c.sessionKey}}
	withKeys := func(bearer string, more ...string) http.Header {
		h := http.Header{"X-Session-API-Key": {c.sessionKey}, "Authorization": {"Bearer " + bearer}}
		for i := 0; i+1 < len(more); i += 2 {
			h.Set(more[i], more[i+1])
		}
		return h
	}
	type settingsJSON struct {
		AgentSettings struct {
			LLM struct {
				Model  *string `json:"model"`
				APIKey *string `json:"api_key"`
			} `json:"llm"`
		} `json:"agent_settings"`
		ConversationSettings map[string]any `json:"conversation_settings"`
		LLMAPIKeyIsSet       bool           `json:"llm_api_key_is_set"`
		ActiveProfile        *string        `json:"active_profile"`
		AppPreferences       struct {
			GitUserName    *string  `json:"git_user_name"`
			DisabledSkills []string `json:"disabled_skills"`
		} `json:"app_preferences"`
	}
	get := func(t *testing.T, url string, h http.Header, want int, says string) []byte {
		t.Helper()
		st, b := e.callAt("GET", url, h, nil)
		if st != want || !strings.Contains(string(b), says) {
			t.Fatalf("GET %s: %d %s, want %d saying %q", url, st, b, want, says)
		}
		return b
	}

	t.Run("settings, masked", func(t *testing.T) {
		b := get(t, host+"/api/settings", session, 200, "")
		var s settingsJSON
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if strOrNil(s.AgentSettings.LLM.Model) != "openai/gpt-4o" || s.AgentSettings.LLM.APIKey != nil || !s.LLMAPIKeyIsSet ||
			s.ActiveProfile != nil || s.ConversationSettings == nil || strOrNil(s.AppPreferences.GitUserName) != "Alice" || s.AppPreferences.DisabledSkills == nil {
			t.Fatalf("settings %s", b)
		}
		if strings.Contains(string(b), llmKey) {
			t.Fatalf("masked settings show the key: %s", b)
		}
	})
	t.Run("settings, exposed beside the owner's key", func(t *testing.T) {
		b := get(t, host+"/api/settings", withKeys(alice, "X-Expose-Secrets", "plaintext"), 200, llmKey)
		var s settingsJSON
		if err := json.Unmarshal(b, &s); err != nil || strOrNil(s.AgentSettings.LLM.APIKey) != llmKey {
			t.Fatalf("exposed settings %s", b)
		}
	})
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   int
		says   string
	}{
		{"exposed with the session key alone", host + "/api/settings", http.Header{"X-Session-API-Key": {c.sessionKey}, "X-Expose-Secrets": {"plaintext"}}, 403, "Authorization: Bearer"},
		{"exposed beside another user's key", host + "/api/settings", withKeys(bob, "X-Expose-Secrets", "true"), 403, "not the sandbox owner's"},
		{"encrypted", host + "/api/settings", withKeys(alice, "X-Expose-Secrets", "encrypted"), 422, "X-Expose-Secrets"},
		{"the query parameter", host + "/api/settings?expose_secrets=true", withKeys(alice), 400, "X-Expose-Secrets"},
		{"another user's sandbox under the prefix", e.srv.URL + "/agent-server/" + c.sandboxID + "/api/settings", http.Header{"X-Session-API-Key": {bob}}, 404, ""},
		{"no key", host + "/api/settings", nil, 401, ""},
		{"secrets", host + "/api/settings/secrets", session, 200, `{"secrets":[{"name":"MY_TOKEN","description":null}]}`},
		{"a secret's value", host + "/api/settings/secrets/MY_TOKEN", session, 200, token},
		{"an unknown secret", host + "/api/settings/secrets/OTHER", session, 404, "Secret not found"},
		{"a secret with the owner's key", e.srv.URL + "/agent-server/" + c.sandboxID + "/api/settings/secrets/MY_TOKEN", http.Header{"X-Session-API-Key": {alice}}, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := get(t, tc.url, tc.header, tc.want, tc.says)
			if tc.want != 200 && (strings.Contains(string(b), llmKey) || strings.Contains(string(b), token)) {
				t.Fatalf("a refusal shows a secret: %s", b)
			}
		})
	}
	if strings.Contains(e.logs.String(), llmKey) || strings.Contains(e.logs.String(), token) {
		t.Fatal("the log shows a secret")
	}
}
