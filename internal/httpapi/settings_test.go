package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/wire"
)

// Plaintexts of the secrets these tests store; each must never come back out.
const (
	llmKeyPlain     = "sk-llm-PLAINTEXT-7f3a9c"
	llmKey2Plain    = "sk-llm-SECOND-PLAINTEXT-11b2"
	mcpKeyPlain     = "mcp-sse-PLAINTEXT-4d2e81"
	mcpKey2Plain    = "mcp-sse-ROTATED-PLAINTEXT-9e0f"
	searchKeyPlain  = "tvly-search-PLAINTEXT-55aa"
	sandboxKeyPlain = "sandbox-PLAINTEXT-31c7"
)

// settingsJSON reads GET /api/settings as generic JSON.
func (e *env) settingsJSON(key string) map[string]any {
	e.t.Helper()
	var out map[string]any
	e.must("GET", "/api/settings", key, nil, http.StatusOK, &out)
	return out
}

// storedMCPConfig unseals the user's stored MCP configuration, with its keys.
func (e *env) storedMCPConfig(userID string) *apitypes.MCPConfig {
	e.t.Helper()
	rec, err := e.inspectStore().GetSettings(context.Background(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	sealed, ok := rec.Secrets["mcp_config"]
	if !ok {
		return nil
	}
	plain, err := e.inspectKeyring().Open(sealed)
	if err != nil {
		e.t.Fatal(err)
	}
	var m apitypes.MCPConfig
	if err := json.Unmarshal(plain, &m); err != nil {
		e.t.Fatalf("stored MCP configuration %s: %v", plain, err)
	}
	return &m
}

// storedSecret unseals one of the user's secret settings; ok is false when it is not set.
func (e *env) storedSecret(userID, name string) (string, bool) {
	e.t.Helper()
	rec, err := e.inspectStore().GetSettings(context.Background(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	sealed, ok := rec.Secrets[name]
	if !ok {
		return "", false
	}
	plain, err := e.inspectKeyring().Open(sealed)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(plain), true
}

func wantMessage(t *testing.T, body []byte, msg string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || !reflect.DeepEqual(got, map[string]any{"message": msg}) {
		t.Fatalf("body %s, want {\"message\": %q}", body, msg)
	}
}

func TestSettingsStoreAndRead(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	rec := &bodyRecorder{e: e}

	status, body := rec.call("GET", "/api/settings", alice, nil)
	if status != http.StatusNotFound || string(body) != `{"detail":"Settings not found"}`+"\n" {
		t.Fatalf("GET before any settings: %d %s, want 404", status, body)
	}

	wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{
		"llm_model": "openai/gpt-4o", "llm_base_url": "https://llm.example/v1", "llm_api_key": llmKeyPlain,
		"search_api_key": searchKeyPlain, "sandbox_api_key": sandboxKeyPlain, "confirmation_mode": true, "max_iterations": 50, "condenser_max_size": 20,
		"mcp_config": map[string]any{
			"sse_servers":   []any{map[string]any{"url": "https://sse.example/sse", "api_key": mcpKeyPlain}},
			"stdio_servers": []any{map[string]any{"name": "fs", "command": "npx", "args": "-y fs", "env": "A=1"}},
			"shttp_servers": []any{"https://shttp.example/mcp"},
		},
	}, http.StatusOK), "Settings stored")

	t.Run("read back without secrets", func(t *testing.T) {
		e := e.in(t)
		got := e.settingsJSON(alice)
		want := map[string]any{
			"llm_model": "openai/gpt-4o", "llm_base_url": "https://llm.example/v1", "confirmation_mode": true,
			"max_iterations": 50.0, "condenser_max_size": 20.0,
			"llm_api_key": nil, "search_api_key": nil, "sandbox_api_key": nil,
			"llm_api_key_set": true, "search_api_key_set": true, "provider_tokens_set": map[string]any{},
			"mcp_config": map[string]any{
				"sse_servers":   []any{map[string]any{"url": "https://sse.example/sse", "api_key": nil}},
				"stdio_servers": []any{map[string]any{"name": "fs", "command": "npx", "args": []any{"-y", "fs"}, "env": map[string]any{"A": "1"}}},
				"shttp_servers": []any{map[string]any{"url": "https://shttp.example/mcp", "api_key": nil, "timeout": nil}},
			},
		}
		for k, v := range want {
			if gv, ok := got[k]; !ok || !reflect.DeepEqual(gv, v) {
				t.Errorf("%s = %#v (present %v), want %#v", k, gv, ok, v)
			}
		}
		if key := e.storedMCPConfig(aliceID).SSEServers[0].APIKey; key == nil || *key != mcpKeyPlain {
			t.Errorf("stored SSE key %v, want the one sent", key)
		}
		for name, want := range map[string]string{"llm_api_key": llmKeyPlain, "search_api_key": searchKeyPlain, "sandbox_api_key": sandboxKeyPlain} {
			if v, ok := e.storedSecret(aliceID, name); !ok || v != want {
				t.Errorf("stored %s %q (set %v), want the one sent", name, v, ok)
			}
		}
	})

	t.Run("absent and null fields keep their value", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"language": "fr", "llm_model": nil, "llm_api_key": nil, "mcp_config": nil}, http.StatusOK), "Settings stored")
		got := e.settingsJSON(alice)
		if got["language"] != "fr" || got["llm_model"] != "openai/gpt-4o" || got["llm_api_key_set"] != true || got["confirmation_mode"] != true {
			t.Errorf("after a language-only POST: %v", got)
		}
		if v, ok := e.storedSecret(aliceID, "llm_api_key"); !ok || v != llmKeyPlain {
			t.Errorf("stored LLM key %q (set %v), want it kept", v, ok)
		}
		if m := e.storedMCPConfig(aliceID); m == nil || len(m.SSEServers) != 1 || m.SSEServers[0].APIKey == nil || *m.SSEServers[0].APIKey != mcpKeyPlain {
			t.Errorf("stored MCP configuration %+v, want it kept", m)
		}
	})

	t.Run("unknown fields are ignored", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"no_such_setting": 1}, http.StatusOK), "Settings stored")
		if _, ok := e.settingsJSON(alice)["no_such_setting"]; ok {
			t.Error("GET shows an unknown field")
		}
		stored, err := e.inspectStore().GetSettings(context.Background(), aliceID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stored.Values), "no_such_setting") {
			t.Errorf("an unknown field was stored: %s", stored.Values)
		}
	})

	t.Run("a server sent back without its key keeps it", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		read := e.settingsJSON(alice)["mcp_config"].(map[string]any)
		read["sse_servers"] = append(read["sse_servers"].([]any), map[string]any{"url": "https://other.example/sse"})
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"mcp_config": read}, http.StatusOK), "Settings stored")
		m := e.storedMCPConfig(aliceID)
		if len(m.SSEServers) != 2 || m.SSEServers[0].APIKey == nil || *m.SSEServers[0].APIKey != mcpKeyPlain || m.SSEServers[1].APIKey != nil {
			t.Errorf("stored SSE servers %+v, want the first with its key and the new one without", m.SSEServers)
		}
		if len(m.StdioServers) != 1 || len(m.SHTTPServers) != 1 {
			t.Errorf("stored servers %+v, want the stdio and shttp servers sent back", m)
		}
		for _, s := range e.settingsJSON(alice)["mcp_config"].(map[string]any)["sse_servers"].([]any) {
			if s.(map[string]any)["api_key"] != nil {
				t.Errorf("GET shows an SSE key: %v", s)
			}
		}
	})

	t.Run("a new server key replaces the stored one", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"mcp_config": map[string]any{
			"sse_servers": []any{map[string]any{"url": "https://sse.example/sse", "api_key": mcpKey2Plain}}}}, http.StatusOK), "Settings stored")
		m := e.storedMCPConfig(aliceID)
		if len(m.SSEServers) != 1 || m.SSEServers[0].APIKey == nil || *m.SSEServers[0].APIKey != mcpKey2Plain {
			t.Errorf("stored SSE servers %+v, want the new key", m.SSEServers)
		}
	})

	t.Run("an empty key clears it", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"llm_api_key": ""}, http.StatusOK), "Settings stored")
		got := e.settingsJSON(alice)
		if got["llm_api_key_set"] != false || got["llm_api_key"] != nil || got["search_api_key_set"] != true || got["llm_model"] != "openai/gpt-4o" {
			t.Errorf("after clearing the LLM key: %v", got)
		}
		if _, ok := e.storedSecret(aliceID, "llm_api_key"); ok {
			t.Error("the LLM key is still stored")
		}
		wantMessage(t, rec.must("POST", "/api/settings", alice, map[string]any{"llm_api_key": llmKey2Plain}, http.StatusOK), "Settings stored")
		if v, ok := e.storedSecret(aliceID, "llm_api_key"); !ok || v != llmKey2Plain {
			t.Errorf("stored LLM key %q (set %v), want the new one", v, ok)
		}
	})

	t.Run("other users never see them", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		status, body := rec.call("GET", "/api/settings", bob, nil)
		if status != http.StatusNotFound {
			t.Fatalf("bob's GET: %d %s, want 404", status, body)
		}
		wantMessage(t, rec.must("POST", "/api/settings", bob, map[string]any{"language": "de"}, http.StatusOK), "Settings stored")
		got := e.settingsJSON(bob)
		if got["language"] != "de" || got["llm_model"] != nil || got["llm_api_key_set"] != false || got["mcp_config"] != nil {
			t.Errorf("bob's settings %v", got)
		}
		if a := e.settingsJSON(alice); a["language"] != "fr" {
			t.Errorf("alice's language changed to %v", a["language"])
		}
	})

	t.Run("secrets never come out", func(t *testing.T) {
		e := e.in(t)
		rec := rec.in(t)
		rec.must("GET", "/api/settings", alice, nil, http.StatusOK)
		rec.must("GET", "/api/settings", bob, nil, http.StatusOK)
		secrets := []string{llmKeyPlain, llmKey2Plain, mcpKeyPlain, mcpKey2Plain, searchKeyPlain, sandboxKeyPlain}
		rec.checkNone(t, secrets)
		e.checkDataDirLacks(t, secrets)
	})
}

func TestSettingsValidation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.must("POST", "/api/settings", alice, map[string]any{"llm_model": "m", "max_iterations": 10}, http.StatusOK, nil)
	before := e.dbRows()
	stored := e.settingsJSON(alice)

	at := func(loc ...any) []any { return append([]any{"body"}, loc...) }
	p := func(typ, msg string, loc []any) wire.Problem { return wire.Problem{Type: typ, Loc: loc, Msg: msg} }
	for _, tc := range []struct {
		name, body string
		want       []wire.Problem
	}{
		{"condenser_max_size 5", `{"condenser_max_size": 5}`, []wire.Problem{p("greater_than_equal", "Input should be greater than or equal to 20", at("condenser_max_size"))}},
		{"condenser_max_size 19", `{"condenser_max_size": 19}`, []wire.Problem{p("greater_than_equal", "Input should be greater than or equal to 20", at("condenser_max_size"))}},
		{"max_iterations 0", `{"max_iterations": 0}`, []wire.Problem{p("greater_than_equal", "Input should be greater than or equal to 1", at("max_iterations"))}},
		{"max_iterations negative", `{"max_iterations": -4}`, []wire.Problem{p("greater_than_equal", "Input should be greater than or equal to 1", at("max_iterations"))}},
		{"max_iterations as string", `{"max_iterations": "5"}`, []wire.Problem{p("int_type", "Input should be a valid integer", at("max_iterations"))}},
		{"max_iterations fractional", `{"max_iterations": 2.5}`, []wire.Problem{p("int_from_float", "Input should be a valid integer, got a number with a fractional part", at("max_iterations"))}},
		{"max_budget_per_task negative", `{"max_budget_per_task": -0.5}`, []wire.Problem{p("greater_than_equal", "Input should be greater than or equal to 0", at("max_budget_per_task"))}},
		{"max_budget_per_task as string", `{"max_budget_per_task": "1"}`, []wire.Problem{p("float_type", "Input should be a valid number", at("max_budget_per_task"))}},
		{"llm_model number", `{"llm_model": 4}`, []wire.Problem{p("string_type", "Input should be a valid string", at("llm_model"))}},
		{"llm_api_key number", `{"llm_api_key": 123456}`, []wire.Problem{p("string_type", "Input should be a valid string", at("llm_api_key"))}},
		{"confirmation_mode string", `{"confirmation_mode": "yes"}`, []wire.Problem{p("bool_type", "Input should be a valid boolean", at("confirmation_mode"))}},
		{"enable_default_condenser number", `{"enable_default_condenser": 1}`, []wire.Problem{p("bool_type", "Input should be a valid boolean", at("enable_default_condenser"))}},
		{"mcp_config bad url", `{"mcp_config": {"sse_servers": ["example.com"]}}`, []wire.Problem{p("value_error",
			"Value error, URL must include a scheme (http:// or https://)", at("mcp_config", "sse_servers", 0, "url"))}},
		{"mcp_config unknown key", `{"mcp_config": {"servers": []}}`, []wire.Problem{p("extra_forbidden", "Extra inputs are not permitted", at("mcp_config", "servers"))}},
		{"llm_model too long", `{"llm_model": "` + strings.Repeat("m", 501) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 500 characters", at("llm_model"))}},
		{"llm_base_url too long", `{"llm_base_url": "https://llm.example/` + strings.Repeat("p", 2000) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 2000 characters", at("llm_base_url"))}},
		{"git_user_email too long", `{"git_user_email": "` + strings.Repeat("e", 321) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 320 characters", at("git_user_email"))}},
		{"llm_api_key too long", `{"llm_api_key": "` + llmKey2Plain + strings.Repeat("k", 65536) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 65536 characters", at("llm_api_key"))}},
		{"body a list", `[]`, []wire.Problem{p("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", at())}},
		{"invalid JSON", `{"language": "en"`, []wire.Problem{p("json_invalid", "JSON decode error", at(17))}},
		{"a secret among problems", `{"llm_api_key": "` + llmKey2Plain + `", "max_iterations": 0, "condenser_max_size": 1, "language": 5}`, []wire.Problem{
			p("string_type", "Input should be a valid string", at("language")),
			p("greater_than_equal", "Input should be greater than or equal to 1", at("max_iterations")),
			p("greater_than_equal", "Input should be greater than or equal to 20", at("condenser_max_size")),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/settings", alice, tc.body)
			assertProblems(t, status, body, tc.want)
			if strings.Contains(string(body), llmKey2Plain) {
				t.Errorf("422 body %s echoes the key", body)
			}
			checkDBUnchanged(t, before, e.dbRows())
		})
	}
	if got := e.settingsJSON(alice); !reflect.DeepEqual(got, stored) {
		t.Errorf("settings after rejected requests %v, want %v", got, stored)
	}
}

// TestSettingsEveryField stores a value for every plain field of the wire type and reads each
// back, so a field the settings service does not keep fails here.
func TestSettingsEveryField(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	body := map[string]any{}
	st := reflect.TypeFor[apitypes.Settings]()
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if strings.Contains(f.Tag.Get("wire"), "secret") || name == "mcp_config" {
			continue // secrets are never shown; MCP servers have their own tests
		}
		switch f.Type.Elem().Kind() {
		case reflect.String:
			body[name] = "value of " + name
			if name == "llm_base_url" {
				body[name] = "https://llm.example/v1"
			}
		case reflect.Int:
			body[name] = 25.0 // within every integer field's bounds
		case reflect.Bool:
			body[name] = true
		case reflect.Float64:
			body[name] = 1.5
		default:
			t.Fatalf("field %s: no test value for %s", name, f.Type)
		}
	}
	wantMessage(t, e.must("POST", "/api/settings", alice, body, http.StatusOK, nil), "Settings stored")
	got := e.settingsJSON(alice)
	for name, want := range body {
		if got[name] != want {
			t.Errorf("%s = %#v, want %#v", name, got[name], want)
		}
	}
}

// TestSettingsCorruptStoredValue: agentd stores only values it validated, so one it cannot
// read is damage to the store: an internal error, logged with the field's name, and a
// generic 500 for the client.
func TestSettingsCorruptStoredValue(t *testing.T) {
	e := newEnv(t)
	var log syncLog
	e.restartLogged(&log)
	aliceID, alice := e.newUser("alice")
	e.must("POST", "/api/settings", alice, map[string]any{"language": "en", "llm_api_key": llmKeyPlain}, http.StatusOK, nil)

	st := e.inspectStore()
	rec, err := st.GetSettings(context.Background(), aliceID)
	if err != nil {
		t.Fatal(err)
	}
	rec.Values = json.RawMessage(`{"language": "en", "max_iterations": "ten"}`)
	if err := st.PutSettings(context.Background(), rec); err != nil {
		t.Fatal(err)
	}

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/settings", nil},
		{"POST", "/api/settings", map[string]any{"language": "fr"}},
		{"POST", "/api/conversations", map[string]any{"initial_user_msg": "hi"}},
	} {
		status, body := e.call(req.method, req.path, alice, req.body)
		if status != http.StatusInternalServerError || string(body) != `{"detail":"Internal Server Error"}`+"\n" {
			t.Errorf("%s %s over a corrupt setting: %d %s, want a generic 500", req.method, req.path, status, body)
		}
	}
	if !strings.Contains(log.String(), "settings: stored value of max_iterations: json: cannot unmarshal string into int") {
		t.Errorf("the log does not name the corrupt field:\n%s", log.String())
	}

	// Sending the damaged field mends it.
	e.must("POST", "/api/settings", alice, map[string]any{"max_iterations": 30}, http.StatusOK, nil)
	if got := e.settingsJSON(alice); got["max_iterations"] != 30.0 || got["language"] != "en" || got["llm_api_key_set"] != true {
		t.Errorf("settings after mending: %v", got)
	}
}
