package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// The current web app's first call answers without a key, with every field of OpenHands'
// WebClientConfig.
func TestWebClientConfig(t *testing.T) {
	e := newEnv(t)
	data := e.must("GET", "/api/v1/web-client/config", "", nil, http.StatusOK, nil)
	want := []string{"app_mode", "auth_url", "error_message", "faulty_models", "feature_flags", "github_app_slug",
		"maintenance_start_time", "posthog_client_key", "providers_configured", "recaptcha_site_key", "updated_at"}
	if got := keysOf(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	flags := map[string]any{"enable_billing": false, "hide_llm_settings": false, "enable_jira": false, "enable_jira_dc": false, "enable_linear": false}
	if got["app_mode"] != "oss" || got["posthog_client_key"] != nil || !reflect.DeepEqual(got["feature_flags"], flags) ||
		!reflect.DeepEqual(got["providers_configured"], []any{}) || !reflect.DeepEqual(got["faulty_models"], []any{}) {
		t.Fatalf("web client config %s", data)
	}
}

func TestServerInfo(t *testing.T) {
	e := newEnv(t)
	var info struct {
		Version    string   `json:"version"`
		APIVersion string   `json:"api_version"`
		Uptime     *float64 `json:"uptime"`
		AppMode    string   `json:"app_mode"`
		StartedAt  string   `json:"started_at"`
	}
	data := e.must("GET", "/server_info", "", nil, http.StatusOK, &info)
	if info.APIVersion == "" || info.Uptime == nil || *info.Uptime < 0 || info.AppMode != "oss" || info.StartedAt == "" {
		t.Fatalf("server info %s", data)
	}
}

type modelPage struct {
	Items []struct {
		Provider *string `json:"provider"`
		Name     string  `json:"name"`
		Verified bool    `json:"verified"`
	} `json:"items"`
	NextPageID *string `json:"next_page_id"`
}

func TestModelSearch(t *testing.T) {
	e := newEnv(t) // its server model is gpt-4o, with no provider prefix
	var all modelPage
	e.must("GET", "/api/v1/config/models/search?limit=100", adminKey, nil, http.StatusOK, &all)
	if all.NextPageID != nil || len(all.Items) < 3 {
		t.Fatalf("all models: %+v", all)
	}
	var sawBare, sawSonnet bool
	for _, m := range all.Items {
		switch {
		case m.Provider == nil && m.Name == "gpt-4o":
			sawBare = !m.Verified // the server's name, beside the verified openai/gpt-4o
		case m.Provider != nil && *m.Provider == "anthropic" && m.Name == "claude-sonnet-4-5":
			sawSonnet = m.Verified
		}
	}
	if !sawBare || !sawSonnet {
		t.Fatalf("models %+v: want the server's gpt-4o unverified and anthropic/claude-sonnet-4-5 verified", all.Items)
	}

	// Pages follow each other without gaps or repeats.
	var names []string
	path := "/api/v1/config/models/search?limit=2"
	for range len(all.Items) {
		var p modelPage
		e.must("GET", path, adminKey, nil, http.StatusOK, &p)
		for _, m := range p.Items {
			names = append(names, m.Name)
		}
		if p.NextPageID == nil {
			break
		}
		path = "/api/v1/config/models/search?limit=2&page_id=" + *p.NextPageID
	}
	if len(names) != len(all.Items) {
		t.Fatalf("paged %d models, want %d", len(names), len(all.Items))
	}

	var filtered modelPage
	e.must("GET", "/api/v1/config/models/search?provider__eq=anthropic&query=SONNET&verified__eq=true", adminKey, nil, http.StatusOK, &filtered)
	if len(filtered.Items) == 0 {
		t.Fatal("no anthropic sonnet model")
	}
	for _, m := range filtered.Items {
		if m.Provider == nil || *m.Provider != "anthropic" || !m.Verified {
			t.Fatalf("filtered models %+v", filtered.Items)
		}
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/v1/config/models/search?page_id=nope", http.StatusUnprocessableEntity},
		{"/api/v1/config/models/search?limit=0", http.StatusUnprocessableEntity},
		{"/api/v1/config/models/search?verified__eq=maybe", http.StatusUnprocessableEntity},
	} {
		if status, body := e.call("GET", tc.path, adminKey, nil); status != tc.want {
			t.Errorf("GET %s: %d %s, want %d", tc.path, status, body, tc.want)
		}
	}
	if status, _ := e.call("GET", "/api/v1/config/models/search", "", nil); status != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", status)
	}
}

func TestProviderSearch(t *testing.T) {
	e := newEnv(t)
	var page struct {
		Items []struct {
			Name     string `json:"name"`
			Verified bool   `json:"verified"`
		} `json:"items"`
		NextPageID *string `json:"next_page_id"`
	}
	e.must("GET", "/api/v1/config/providers/search", adminKey, nil, http.StatusOK, &page)
	want := []string{"anthropic", "openai"}
	var got []string
	for _, p := range page.Items {
		if !p.Verified {
			t.Errorf("provider %s is not verified", p.Name)
		}
		got = append(got, p.Name)
	}
	if !reflect.DeepEqual(got, want) || page.NextPageID != nil {
		t.Fatalf("providers %v (next %v), want %v", got, page.NextPageID, want)
	}
	e.must("GET", "/api/v1/config/providers/search?query=anth", adminKey, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Name != "anthropic" {
		t.Fatalf("query anth: %+v", page.Items)
	}
}

// TestVerifiedProviders: newer web apps read the verified providers as a list of names, the
// verified ones of the search.
func TestVerifiedProviders(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	var names []string
	e.must("GET", "/api/v1/config/providers", alice, nil, http.StatusOK, &names)
	if want := []string{"anthropic", "openai"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("verified providers %v, want %v", names, want)
	}
	e.must("GET", "/api/v1/config/providers", "", nil, http.StatusUnauthorized, nil)
}
