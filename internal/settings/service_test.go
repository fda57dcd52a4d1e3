package settings_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store/sqlite"
)

const user = "user-1"

// fixture is a settings service on a real SQLite store and keyring, and the store beside it
// for reading and damaging what the service stored.
type fixture struct {
	svc    *settings.Service
	store  *sqlite.Store
	sealer secret.Sealer
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kr, err := secret.LoadOrCreate(filepath.Join(dir, "keyring.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }
	return fixture{svc: settings.NewService(st, kr, now), store: st, sealer: kr}
}

func (f fixture) apply(t *testing.T, u settings.Update) {
	t.Helper()
	if err := f.svc.Apply(t.Context(), user, u); err != nil {
		t.Fatalf("apply %+v: %v", u, err)
	}
}

func (f fixture) get(t *testing.T) settings.View {
	t.Helper()
	v, err := f.svc.Get(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f fixture) secret(t *testing.T, name string) (string, bool) {
	t.Helper()
	v, ok, err := f.svc.Secret(t.Context(), user, name)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// storedMCP unseals the stored MCP configuration, keys and all.
func (f fixture) storedMCP(t *testing.T) settings.MCPConfig {
	t.Helper()
	v, ok := f.secret(t, "mcp_config")
	if !ok {
		t.Fatal("no MCP configuration is stored")
	}
	var m settings.MCPConfig
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// putValues replaces the stored values object with raw, as another version of agentd, or
// damage, might have left it.
func (f fixture) putValues(t *testing.T, raw string) {
	t.Helper()
	r, err := f.store.GetSettings(t.Context(), user)
	if errors.Is(err, settings.ErrNotFound) {
		r = settings.Record{UserID: user, UpdatedAt: time.Unix(1, 0).UTC()}
	} else if err != nil {
		t.Fatal(err)
	}
	r.Values = json.RawMessage(raw)
	if err := f.store.PutSettings(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) storedValues(t *testing.T) map[string]any {
	t.Helper()
	r, err := f.store.GetSettings(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Values, &m); err != nil {
		t.Fatalf("stored values %s: %v", r.Values, err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

// every sets each field of Settings.
var every = settings.Settings{
	Language:                            ptr("fr"),
	Agent:                               ptr("CodeActAgent"),
	MaxIterations:                       ptr(50),
	SecurityAnalyzer:                    ptr("llm"),
	ConfirmationMode:                    ptr(true),
	LLMModel:                            ptr("openai/gpt-4o"),
	LLMBaseURL:                          ptr("https://llm.example/v1"),
	RemoteRuntimeResourceFactor:         ptr(2),
	EnableDefaultCondenser:              ptr(false),
	EnableSoundNotifications:            ptr(true),
	EnableProactiveConversationStarters: ptr(false),
	UserConsentsToAnalytics:             ptr(false),
	SandboxBaseContainerImage:           ptr("debian:12"),
	SandboxRuntimeContainerImage:        ptr("runtime:1"),
	MaxBudgetPerTask:                    ptr(2.5),
	CondenserMaxSize:                    ptr(40),
	GitUserName:                         ptr("Alice"),
	GitUserEmail:                        ptr("alice@example.com"),
}

func TestEveryFieldRoundTrips(t *testing.T) {
	f := newFixture(t)
	if _, err := f.svc.Get(t.Context(), user); !errors.Is(err, settings.ErrNotFound) {
		t.Fatalf("get before any apply: %v, want ErrNotFound", err)
	}
	rv := reflect.ValueOf(every)
	for i := range rv.NumField() {
		if rv.Field(i).IsNil() {
			t.Fatalf("the test's settings leave %s unset", rv.Type().Field(i).Name)
		}
	}
	f.apply(t, settings.Update{Settings: every, LLMAPIKey: ptr("sk-llm"), SearchAPIKey: ptr("sk-search"), SandboxAPIKey: ptr("sk-sandbox")})

	got := f.get(t)
	if !reflect.DeepEqual(got.Settings, every) {
		t.Errorf("settings %+v, want %+v", got.Settings, every)
	}
	if !got.LLMAPIKeySet || !got.SearchAPIKeySet || !got.SandboxAPIKeySet || got.MCP != nil {
		t.Errorf("view %+v, want every secret set and no MCP configuration", got)
	}
	if want := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC); !got.UpdatedAt.Equal(want) {
		t.Errorf("updated at %v, want %v", got.UpdatedAt, want)
	}
	for name, want := range map[string]string{settings.LLMAPIKey: "sk-llm", settings.SearchAPIKey: "sk-search", settings.SandboxAPIKey: "sk-sandbox"} {
		if v, ok := f.secret(t, name); !ok || v != want {
			t.Errorf("secret %s = %q (set %v), want %q", name, v, ok, want)
		}
	}
	// The stored form is the API's names, so rows written before settings were typed read
	// back unchanged, and secrets are not among the plain values.
	stored := f.storedValues(t)
	for _, name := range []string{"language", "max_iterations", "llm_model", "max_budget_per_task", "enable_proactive_conversation_starters", "git_user_email"} {
		if _, ok := stored[name]; !ok {
			t.Errorf("stored values %v lack %s", stored, name)
		}
	}
	for name, v := range stored {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "sk-") {
			t.Errorf("stored value %s holds a secret", name)
		}
	}
}

func TestApplyKeepsWhatItDoesNotSet(t *testing.T) {
	f := newFixture(t)
	f.apply(t, settings.Update{Settings: every, LLMAPIKey: ptr("sk-llm"), SearchAPIKey: ptr("sk-search")})

	f.apply(t, settings.Update{Settings: settings.Settings{Language: ptr("de"), MaxIterations: ptr(9)}})
	want := every
	want.Language, want.MaxIterations = ptr("de"), ptr(9)
	if got := f.get(t); !reflect.DeepEqual(got.Settings, want) || !got.LLMAPIKeySet || !got.SearchAPIKeySet {
		t.Errorf("after a partial update: %+v, want %+v with both keys set", got, want)
	}
	if v, ok := f.secret(t, settings.LLMAPIKey); !ok || v != "sk-llm" {
		t.Errorf("LLM key %q (set %v) after an update without it, want it kept", v, ok)
	}

	f.apply(t, settings.Update{LLMAPIKey: ptr("")})
	if got := f.get(t); got.LLMAPIKeySet || !got.SearchAPIKeySet || !reflect.DeepEqual(got.Settings, want) {
		t.Errorf("after clearing the LLM key: %+v", got)
	}
	if _, ok := f.secret(t, settings.LLMAPIKey); ok {
		t.Error("the cleared LLM key is still stored")
	}
}

func TestMCPKeysKeptByURL(t *testing.T) {
	f := newFixture(t)
	f.apply(t, settings.Update{MCP: &settings.MCPConfig{
		SSEServers:   []settings.MCPSSEServer{{URL: "https://a.example/sse", APIKey: ptr("key-a")}, {URL: "https://b.example/sse", APIKey: ptr("key-b")}},
		SHTTPServers: []settings.MCPSHTTPServer{{URL: "https://c.example/mcp", APIKey: ptr("key-c"), Timeout: ptr(30)}},
		StdioServers: []settings.MCPStdioServer{{Name: "fs", Command: "npx", Args: []string{"-y", "fs"}, Env: map[string]string{"A": "1"}}},
	}})

	shown := f.get(t).MCP
	want := &settings.MCPConfig{
		SSEServers:   []settings.MCPSSEServer{{URL: "https://a.example/sse"}, {URL: "https://b.example/sse"}},
		SHTTPServers: []settings.MCPSHTTPServer{{URL: "https://c.example/mcp", Timeout: ptr(30)}},
		StdioServers: []settings.MCPStdioServer{{Name: "fs", Command: "npx", Args: []string{"-y", "fs"}, Env: map[string]string{"A": "1"}}},
	}
	if !reflect.DeepEqual(shown, want) {
		t.Fatalf("shown MCP configuration %+v, want %+v (no keys)", shown, want)
	}

	// Sent back as read, with one key replaced, one server added, and an SHTTP server at
	// an SSE server's URL: keys follow the kind and URL of a server, nothing else.
	sent := &settings.MCPConfig{
		SSEServers:   []settings.MCPSSEServer{{URL: "https://b.example/sse"}, {URL: "https://a.example/sse", APIKey: ptr("key-a2")}, {URL: "https://new.example/sse"}},
		SHTTPServers: []settings.MCPSHTTPServer{{URL: "https://c.example/mcp", Timeout: ptr(30)}, {URL: "https://b.example/sse"}},
	}
	f.apply(t, settings.Update{MCP: sent})
	stored := f.storedMCP(t)
	wantStored := settings.MCPConfig{
		SSEServers:   []settings.MCPSSEServer{{URL: "https://b.example/sse", APIKey: ptr("key-b")}, {URL: "https://a.example/sse", APIKey: ptr("key-a2")}, {URL: "https://new.example/sse"}},
		SHTTPServers: []settings.MCPSHTTPServer{{URL: "https://c.example/mcp", APIKey: ptr("key-c"), Timeout: ptr(30)}, {URL: "https://b.example/sse"}},
	}
	if !reflect.DeepEqual(stored, wantStored) {
		t.Errorf("stored MCP configuration %+v, want %+v", stored, wantStored)
	}
	if sent.SSEServers[0].APIKey != nil {
		t.Error("Apply wrote a stored key into the caller's configuration")
	}

	f.apply(t, settings.Update{Settings: settings.Settings{Language: ptr("en")}})
	if got := f.storedMCP(t); !reflect.DeepEqual(got, wantStored) {
		t.Errorf("MCP configuration after an update without it %+v, want it kept", got)
	}
}

func TestStoredValues(t *testing.T) {
	for _, tc := range []struct {
		name, stored string
		want         settings.Settings
		wantErr      string // the error of Get; "" for none
	}{
		{"a row from before settings were typed", `{"llm_model": "model-a", "language": "en"}`,
			settings.Settings{LLMModel: ptr("model-a"), Language: ptr("en")}, ""},
		{"keys of another version are skipped", `{"language": "en", "future_setting": {"x": [1]}, "max_iterations": 3}`,
			settings.Settings{Language: ptr("en"), MaxIterations: ptr(3)}, ""},
		{"null is unset", `{"language": null}`, settings.Settings{}, ""},
		{"a value of the wrong type", `{"language": "en", "max_iterations": "ten"}`, settings.Settings{},
			"get settings of user-1: settings: stored value of max_iterations: json: cannot unmarshal string into int"},
		{"a fraction for an integer", `{"condenser_max_size": 2.5}`, settings.Settings{},
			"get settings of user-1: settings: stored value of condenser_max_size: json: cannot unmarshal number 2.5 into int"},
		{"not an object", `["language"]`, settings.Settings{},
			"get settings of user-1: settings: stored values: json: cannot unmarshal array into Go value of type settings.Settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.putValues(t, tc.stored)
			v, err := f.svc.Get(t.Context(), user)
			if tc.wantErr == "" {
				if err != nil || !reflect.DeepEqual(v.Settings, tc.want) {
					t.Fatalf("get: %+v, %v; want %+v", v.Settings, err, tc.want)
				}
				return
			}
			var ce *settings.CorruptError
			if err == nil || err.Error() != tc.wantErr || !errors.As(err, &ce) {
				t.Fatalf("get: %v, want a *CorruptError %q", err, tc.wantErr)
			}
		})
	}
}

func TestApplyKeepsUnknownKeys(t *testing.T) {
	f := newFixture(t)
	f.putValues(t, `{"language": "en", "future_setting": {"x": [1]}}`)
	f.apply(t, settings.Update{Settings: settings.Settings{Language: ptr("fr")}})
	want := map[string]any{"language": "fr", "future_setting": map[string]any{"x": []any{1.0}}}
	if got := f.storedValues(t); !reflect.DeepEqual(got, want) {
		t.Errorf("stored values %v, want %v", got, want)
	}
}

func TestApplyOverCorruptValue(t *testing.T) {
	f := newFixture(t)
	f.putValues(t, `{"language": "en", "max_iterations": "ten"}`)

	err := f.svc.Apply(t.Context(), user, settings.Update{Settings: settings.Settings{Language: ptr("fr")}})
	var ce *settings.CorruptError
	if !errors.As(err, &ce) || ce.Field != "max_iterations" {
		t.Fatalf("apply beside a corrupt value: %v, want a *CorruptError of max_iterations", err)
	}
	if got := f.storedValues(t)["language"]; got != "en" {
		t.Errorf("language %v after a failed apply, want en", got)
	}

	// An update that replaces the damaged value mends it.
	f.apply(t, settings.Update{Settings: settings.Settings{MaxIterations: ptr(5)}})
	if got := f.get(t).Settings; !reflect.DeepEqual(got, settings.Settings{Language: ptr("en"), MaxIterations: ptr(5)}) {
		t.Errorf("settings after mending %+v", got)
	}
}

func TestCorruptMCPConfiguration(t *testing.T) {
	f := newFixture(t)
	f.apply(t, settings.Update{Settings: settings.Settings{Language: ptr("en")}})
	r, err := f.store.GetSettings(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	if r.Secrets["mcp_config"], err = f.sealer.Seal([]byte(`{"sse_servers": "https://a.example"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutSettings(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Get(t.Context(), user)
	var ce *settings.CorruptError
	if !errors.As(err, &ce) || ce.Field != "mcp_config" {
		t.Errorf("get: %v, want a *CorruptError of mcp_config", err)
	}
	err = f.svc.Apply(t.Context(), user, settings.Update{MCP: &settings.MCPConfig{}})
	if !errors.As(err, &ce) || ce.Field != "mcp_config" {
		t.Errorf("apply an MCP configuration: %v, want a *CorruptError of mcp_config", err)
	}
}
