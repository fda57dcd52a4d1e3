package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

type profileList struct {
	Profiles []struct {
		Name      string  `json:"name"`
		Model     *string `json:"model"`
		BaseURL   *string `json:"base_url"`
		APIKeySet bool    `json:"api_key_set"`
	} `json:"profiles"`
	ActiveProfile *string `json:"active_profile"`
}

func (e *env) profiles(key string) profileList {
	e.t.Helper()
	var l profileList
	data := e.must("GET", "/api/v1/settings/profiles", key, nil, http.StatusOK, &l)
	for _, secret := range []string{llmKeyPlain, llmKey2Plain} {
		if strings.Contains(string(data), secret) {
			e.t.Fatalf("profiles show a key: %s", data)
		}
	}
	return l
}

func TestProfiles(t *testing.T) {
	e := newEnv(t, noInternal)
	uid, alice := e.newUser("alice")
	if l := e.profiles(alice); len(l.Profiles) != 0 || l.ActiveProfile != nil {
		t.Fatalf("profiles before any: %+v", l)
	}
	if status, body := e.call("POST", "/api/v1/settings/profiles/snap", alice, nil); status != http.StatusNotFound {
		t.Fatalf("snapshot without settings: %d %s, want 404", status, body)
	}
	e.must("POST", "/api/v1/settings", alice, map[string]any{"agent_settings_diff": map[string]any{
		"llm": map[string]any{"model": "openai/gpt-4o", "api_key": llmKeyPlain}}}, http.StatusOK, nil)
	e.must("POST", "/api/v1/settings/profiles/snap", alice, nil, http.StatusCreated, nil)
	e.must("POST", "/api/v1/settings/profiles/work", alice, map[string]any{"llm": map[string]any{
		"model": "anthropic/claude-sonnet-4-5", "base_url": "https://llm.example", "api_key": llmKey2Plain}}, http.StatusCreated, nil)
	l := e.profiles(alice)
	if len(l.Profiles) != 2 || l.Profiles[0].Name != "snap" || *l.Profiles[0].Model != "openai/gpt-4o" || !l.Profiles[0].APIKeySet ||
		l.Profiles[1].Name != "work" || *l.Profiles[1].BaseURL != "https://llm.example" || !l.Profiles[1].APIKeySet || l.ActiveProfile != nil {
		t.Fatalf("profiles %+v", l)
	}
	data := e.must("GET", "/api/v1/settings/profiles/work", alice, nil, http.StatusOK, nil)
	if strings.Contains(string(data), llmKey2Plain) || !strings.Contains(string(data), `"api_key":null`) {
		t.Fatalf("profile %s", data)
	}

	// Activating copies the profile, key included, into the active settings.
	e.must("POST", "/api/v1/settings/profiles/work/activate", alice, nil, http.StatusOK, nil)
	var v1 settingsV1
	e.must("GET", "/api/v1/settings", alice, nil, http.StatusOK, &v1)
	if *v1.AgentSettings.LLM.Model != "anthropic/claude-sonnet-4-5" || *v1.AgentSettings.LLM.BaseURL != "https://llm.example" {
		t.Fatalf("settings after activation: %+v", v1.AgentSettings.LLM)
	}
	if key, _ := e.storedSecret(uid, "llm_api_key"); key != llmKey2Plain {
		t.Fatalf("active key %q, want the profile's", key)
	}
	e.must("POST", "/api/v1/settings/profiles/work/rename", alice, map[string]any{"new_name": "job"}, http.StatusOK, nil)
	if l := e.profiles(alice); l.ActiveProfile == nil || *l.ActiveProfile != "job" || l.Profiles[1].Name != "job" || !l.Profiles[1].APIKeySet {
		t.Fatalf("after rename: %+v", l)
	}
	// Sending the same model again keeps the profile active; another model does not.
	e.must("POST", "/api/settings", alice, map[string]any{"llm_model": "anthropic/claude-sonnet-4-5"}, http.StatusOK, nil)
	if l := e.profiles(alice); l.ActiveProfile == nil {
		t.Fatal("an unchanged model deactivated the profile")
	}
	e.must("POST", "/api/settings", alice, map[string]any{"llm_model": "openai/gpt-4.1"}, http.StatusOK, nil)
	if l := e.profiles(alice); l.ActiveProfile != nil {
		t.Fatalf("a changed model left %s active", *l.ActiveProfile)
	}

	for _, tc := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/api/v1/settings/profiles/nope", nil, http.StatusNotFound},
		{"POST", "/api/v1/settings/profiles/nope/activate", nil, http.StatusNotFound},
		{"POST", "/api/v1/settings/profiles/nope/rename", map[string]any{"new_name": "x"}, http.StatusNotFound},
		{"POST", "/api/v1/settings/profiles/snap/rename", map[string]any{"new_name": "job"}, http.StatusConflict},
		{"POST", "/api/v1/settings/profiles/snap/rename", map[string]any{"new_name": "a/b"}, http.StatusUnprocessableEntity},
		{"GET", "/api/v1/settings/profiles/bad%20name", nil, http.StatusUnprocessableEntity},
		{"POST", "/api/v1/settings/profiles/x", map[string]any{"llm": map[string]any{"temperature": 1}}, http.StatusUnprocessableEntity},
		{"POST", "/api/v1/settings/profiles/x", map[string]any{"llm": map[string]any{"base_url": "http://169.254.169.254/"}}, http.StatusUnprocessableEntity},
		{"DELETE", "/api/v1/settings/profiles/nope", nil, http.StatusOK},
		{"GET", "/api/v1/settings/profiles", nil, http.StatusOK},
	} {
		if status, body := e.call(tc.method, tc.path, alice, tc.body); status != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, status, body, tc.want)
		}
	}
	e.must("DELETE", "/api/v1/settings/profiles/job", alice, nil, http.StatusOK, nil)
	if _, ok := e.storedSecret(uid, "llm_profile_key:job"); ok {
		t.Fatal("a deleted profile's key is still stored")
	}
	if l := e.profiles(alice); len(l.Profiles) != 1 {
		t.Fatalf("after delete: %+v", l)
	}
	if status, _ := e.call("GET", "/api/v1/settings/profiles", "", nil); status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d, want 401", status)
	}
}
