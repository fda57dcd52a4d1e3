package httpapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

type settingsV1 struct {
	Language      *string `json:"language"`
	AgentSettings struct {
		SchemaVersion int    `json:"schema_version"`
		AgentKind     string `json:"agent_kind"`
		Agent         string `json:"agent"`
		LLM           struct {
			Model   *string `json:"model"`
			BaseURL *string `json:"base_url"`
			APIKey  *string `json:"api_key"`
		} `json:"llm"`
		Condenser struct {
			Enabled bool `json:"enabled"`
			MaxSize *int `json:"max_size"`
		} `json:"condenser"`
	} `json:"agent_settings"`
	ConversationSettings struct {
		MaxIterations    *int `json:"max_iterations"`
		ConfirmationMode bool `json:"confirmation_mode"`
	} `json:"conversation_settings"`
	LLMAPIKeySet    bool `json:"llm_api_key_set"`
	SearchAPIKeySet bool `json:"search_api_key_set"`
	V1Enabled       bool `json:"v1_enabled"`
}

// The V1 settings are the V0 settings grouped: a change through either shows in both, and
// no stored key ever comes back.
func TestSettingsV1OneTruth(t *testing.T) {
	e := newEnv(t)
	if status, body := e.call("GET", "/api/v1/settings", adminKey, nil); status != http.StatusNotFound {
		t.Fatalf("GET before any save: %d %s, want 404", status, body)
	}
	e.must("POST", "/api/v1/settings", adminKey, map[string]any{
		"language":       "fr",
		"search_api_key": searchKeyPlain,
		"agent_settings_diff": map[string]any{
			"llm":       map[string]any{"model": "anthropic/claude-sonnet-4-5", "base_url": "https://llm.example/v1", "api_key": llmKeyPlain},
			"condenser": map[string]any{"max_size": 80},
		},
		"conversation_settings_diff": map[string]any{"max_iterations": 42},
		"some_future_setting":        true, // top-level keys agentd does not know are ignored
	}, http.StatusOK, nil)

	var v1 settingsV1
	data := e.must("GET", "/api/v1/settings", adminKey, nil, http.StatusOK, &v1)
	a := v1.AgentSettings
	if a.SchemaVersion != 1 || a.AgentKind != "llm" || a.Agent != "CodeActAgent" || *a.LLM.Model != "anthropic/claude-sonnet-4-5" ||
		*a.LLM.BaseURL != "https://llm.example/v1" || a.LLM.APIKey != nil || !a.Condenser.Enabled || *a.Condenser.MaxSize != 80 ||
		*v1.ConversationSettings.MaxIterations != 42 || *v1.Language != "fr" || !v1.LLMAPIKeySet || !v1.SearchAPIKeySet || !v1.V1Enabled {
		t.Fatalf("V1 settings %s", data)
	}
	v0 := e.settingsJSON(adminKey)
	if v0["llm_model"] != "anthropic/claude-sonnet-4-5" || v0["max_iterations"] != 42.0 || v0["condenser_max_size"] != 80.0 || v0["language"] != "fr" {
		t.Fatalf("V0 view of the V1 change: %v", v0)
	}

	// A V0 change shows in the V1 view; the diff of one page keeps what another page set.
	e.must("POST", "/api/settings", adminKey, map[string]any{"enable_default_condenser": false, "llm_model": "openai/gpt-4o"}, http.StatusOK, nil)
	e.must("POST", "/api/v1/settings", adminKey, map[string]any{"conversation_settings_diff": map[string]any{"confirmation_mode": true}}, http.StatusOK, nil)
	data = e.must("GET", "/api/v1/settings", adminKey, nil, http.StatusOK, &v1)
	if v1.AgentSettings.Condenser.Enabled || *v1.AgentSettings.LLM.Model != "openai/gpt-4o" || *v1.ConversationSettings.MaxIterations != 42 ||
		!v1.ConversationSettings.ConfirmationMode || *v1.AgentSettings.LLM.BaseURL != "https://llm.example/v1" {
		t.Fatalf("V1 settings after a V0 change: %s", data)
	}
	if key, _ := e.storedSecret(adminID(t, e), "llm_api_key"); key != llmKeyPlain {
		t.Fatalf("stored LLM key %q, want the one sent", key)
	}
	for _, path := range []string{"/api/v1/settings", "/api/settings"} {
		if _, body := e.call("GET", path, adminKey, nil); strings.Contains(string(body), llmKeyPlain) || strings.Contains(string(body), searchKeyPlain) {
			t.Fatalf("GET %s shows a stored key: %s", path, body)
		}
	}
}

func adminID(t *testing.T, e *env) string {
	t.Helper()
	var me struct {
		ID string `json:"id"`
	}
	e.must("GET", "/api/v1/users/me", adminKey, nil, http.StatusOK, &me)
	return me.ID
}

// What agentd cannot honour is refused at its place, and nothing is stored.
func TestSettingsV1Refusals(t *testing.T) {
	e := newEnv(t, noInternal)
	_, alice := e.newUser("alice")
	for _, tc := range []struct {
		name string
		body map[string]any
		typ  string
		loc  []any
	}{
		{"whole agent_settings", map[string]any{"agent_settings": map[string]any{}}, "value_error", []any{"body", "agent_settings"}},
		{"whole conversation_settings", map[string]any{"conversation_settings": map[string]any{}}, "value_error", []any{"body", "conversation_settings"}},
		{"unknown LLM setting", map[string]any{"agent_settings_diff": map[string]any{"llm": map[string]any{"temperature": 0.2}}},
			"extra_forbidden", []any{"body", "agent_settings_diff", "llm", "temperature"}},
		{"unknown agent setting", map[string]any{"agent_settings_diff": map[string]any{"verification": map[string]any{}}},
			"extra_forbidden", []any{"body", "agent_settings_diff", "verification"}},
		{"ACP agent", map[string]any{"agent_settings_diff": map[string]any{"agent_kind": "acp"}}, "enum", []any{"body", "agent_settings_diff", "agent_kind"}},
		{"too few iterations", map[string]any{"conversation_settings_diff": map[string]any{"max_iterations": 0}},
			"greater_than_equal", []any{"body", "conversation_settings_diff", "max_iterations"}},
		{"model name too long", map[string]any{"agent_settings_diff": map[string]any{"llm": map[string]any{"model": strings.Repeat("m", 501)}}},
			"string_too_long", []any{"body", "agent_settings_diff", "llm", "model"}},
		{"git name too long", map[string]any{"git_user_name": strings.Repeat("n", 257)}, "string_too_long", []any{"body", "git_user_name"}},
		{"internal base URL", map[string]any{"agent_settings_diff": map[string]any{"llm": map[string]any{"base_url": "http://169.254.169.254/"}}},
			"value_error", []any{"body", "agent_settings_diff", "llm", "base_url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/settings", alice, tc.body)
			wantProblem(t, status, body, tc.typ, tc.loc...)
		})
	}
	if status, body := e.call("GET", "/api/v1/settings", alice, nil); status != http.StatusNotFound {
		t.Fatalf("GET after refused saves: %d %s, want 404", status, body)
	}
}

// The schemas list exactly what the diffs accept, keyed by their path.
func TestSettingsSchemas(t *testing.T) {
	e := newEnv(t)
	type schema struct {
		ModelName string `json:"model_name"`
		Sections  []struct {
			Key    string `json:"key"`
			Fields []struct {
				Key       string `json:"key"`
				ValueType string `json:"value_type"`
				Secret    bool   `json:"secret"`
			} `json:"fields"`
		} `json:"sections"`
	}
	for _, tc := range []struct {
		path, model string
		keys        []string
	}{
		{"/api/v1/settings/agent-schema", "AgentSettings", []string{"agent", "llm.model", "llm.base_url", "llm.api_key", "condenser.enabled", "condenser.max_size"}},
		{"/api/v1/settings/conversation-schema", "ConversationSettings", []string{"max_iterations", "confirmation_mode", "security_analyzer"}},
	} {
		var s schema
		e.must("GET", tc.path, adminKey, nil, http.StatusOK, &s)
		var keys []string
		for _, sec := range s.Sections {
			for _, f := range sec.Fields {
				keys = append(keys, f.Key)
				if f.Secret != (f.Key == "llm.api_key") {
					t.Errorf("%s: field %s secret %v", tc.path, f.Key, f.Secret)
				}
			}
		}
		if s.ModelName != tc.model || !reflect.DeepEqual(keys, tc.keys) {
			t.Errorf("%s: model %s keys %v, want %s %v", tc.path, s.ModelName, keys, tc.model, tc.keys)
		}
	}
}
