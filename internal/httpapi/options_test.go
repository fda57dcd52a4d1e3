package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, data []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The web app's first call answers without a key, in OpenHands' shape: oss mode, no
// analytics key, every feature flag off, no login providers.
func TestOptionsConfig(t *testing.T) {
	e := newEnv(t)
	data := e.must("GET", "/api/options/config", "", nil, http.StatusOK, nil)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"APP_MODE": "oss", "GITHUB_CLIENT_ID": "", "POSTHOG_CLIENT_KEY": "",
		"FEATURE_FLAGS": map[string]any{"ENABLE_BILLING": false, "HIDE_LLM_SETTINGS": false,
			"ENABLE_JIRA": false, "ENABLE_JIRA_DC": false, "ENABLE_LINEAR": false},
		"PROVIDERS_CONFIGURED": []any{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET /api/options/config = %s, want %v", data, want)
	}
}

// The settings form's lists answer what agentd offers, as lists of strings.
func TestOptionsLists(t *testing.T) {
	e := newEnv(t)
	var models []string
	e.must("GET", "/api/options/models", adminKey, nil, http.StatusOK, &models)
	for _, m := range []string{"anthropic/claude-sonnet-4-5", "openai/gpt-4o", "gpt-4o"} {
		if !slices.Contains(models, m) {
			t.Errorf("models %v lack %s", models, m)
		}
	}
	if !slices.IsSorted(models) {
		t.Errorf("models %v are not sorted", models)
	}
	var agents, analyzers []string
	e.must("GET", "/api/options/agents", adminKey, nil, http.StatusOK, &agents)
	if !reflect.DeepEqual(agents, []string{"CodeActAgent"}) {
		t.Errorf("agents = %v, want [CodeActAgent]", agents)
	}
	data := e.must("GET", "/api/options/security-analyzers", adminKey, nil, http.StatusOK, &analyzers)
	if string(data) != "[]\n" {
		t.Errorf("security analyzers = %s, want []", data)
	}
	for _, path := range []string{"/api/options/models", "/api/options/agents", "/api/options/security-analyzers"} {
		if status, body := e.call("GET", path, "", nil); status != http.StatusUnauthorized {
			t.Errorf("GET %s without a key: %d %s, want 401", path, status, body)
		}
	}
}

// The conversation config names the conversation and its sandbox, only to its owner.
func TestConversationConfig(t *testing.T) {
	e := newEnv(t)
	_, other := e.newUser("other")
	_, conv := e.newConversation(adminKey, map[string]any{})
	path := "/api/conversations/" + conv.ID + "/config"
	data := e.must("GET", path, adminKey, nil, http.StatusOK, nil)
	if got, want := keysOf(t, data), []string{"runtime_id", "session_id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("config keys %v, want %v", got, want)
	}
	var cfg struct {
		RuntimeID *string `json:"runtime_id"`
		SessionID string  `json:"session_id"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.SessionID != conv.ID || cfg.RuntimeID == nil || *cfg.RuntimeID != conv.SandboxID {
		t.Fatalf("config %s, want session_id %s and runtime_id %s", data, conv.ID, conv.SandboxID)
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{path, other, http.StatusNotFound},
		{path, "", http.StatusUnauthorized},
		{"/api/conversations/0123456789abcdef0123456789abcdef/config", adminKey, http.StatusNotFound},
		{"/api/conversations/" + strings.Repeat("x", 101) + "/config", adminKey, http.StatusBadRequest},
	} {
		if status, body := e.call("GET", tc.path, tc.key, nil); status != tc.want {
			t.Errorf("GET %s: %d %s, want %d", tc.path, status, body, tc.want)
		}
	}
}
