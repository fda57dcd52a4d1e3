package conversation

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/settings"
)

// fakeSettings are one user's settings.
type fakeSettings struct {
	values *settings.Settings
	key    string
	err    error
}

func (f fakeSettings) Get(context.Context, string) (settings.View, error) {
	switch {
	case f.err != nil:
		return settings.View{}, f.err
	case f.values == nil:
		return settings.View{}, settings.ErrNotFound
	}
	return settings.View{Settings: *f.values}, nil
}

func (f fakeSettings) Secret(context.Context, string, string) (string, bool, error) {
	return f.key, f.key != "", nil
}

func TestResolveLLM(t *testing.T) {
	userClient := &http.Client{}
	userHTTP := func(_ context.Context, userID string) (*http.Client, error) {
		if userID != "u" {
			t.Errorf("the URL policy's client for user %q, want u", userID)
		}
		return userClient, nil
	}
	server := LLMDefaults{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5", BaseURL: "https://proxy.internal", APIKey: "sk-server"}
	model := func(s string) *string { return &s }
	for _, tc := range []struct {
		name     string
		defaults LLMDefaults
		user     fakeSettings
		override *string
		want     llm.Config
		missing  string
	}{
		{"server defaults", server, fakeSettings{}, nil,
			llm.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "https://proxy.internal", APIKey: "sk-server"}, ""},
		{"the user's model and key on the server's endpoint", server, fakeSettings{values: &settings.Settings{LLMModel: model("gpt-4o")}, key: "sk-user"}, nil,
			llm.Config{Provider: "anthropic", Model: "gpt-4o", BaseURL: "https://proxy.internal", APIKey: "sk-user"}, ""},
		{"a user's endpoint never gets the server's key, and is reached as the URL policy allows the user", server, fakeSettings{values: &settings.Settings{LLMBaseURL: model(" http://127.0.0.1:11434/v1 "), LLMModel: model("qwen")}}, nil,
			llm.Config{Model: "qwen", BaseURL: "http://127.0.0.1:11434/v1", HTTPClient: userClient}, ""},
		{"the start request's model wins", server, fakeSettings{values: &settings.Settings{LLMModel: model("gpt-4o")}}, model("o3"),
			llm.Config{Provider: "anthropic", Model: "o3", BaseURL: "https://proxy.internal", APIKey: "sk-server"}, ""},
		{"nothing anywhere", LLMDefaults{}, fakeSettings{}, nil, llm.Config{}, "no model is set"},
		{"a public API without a key", LLMDefaults{}, fakeSettings{values: &settings.Settings{LLMModel: model("gpt-4o")}}, nil,
			llm.Config{Model: "gpt-4o"}, "no API key is set for model gpt-4o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService(Options{Settings: tc.user, LLM: tc.defaults, UserHTTP: userHTTP})
			defer s.Close()
			got, _, err := s.resolveLLM(t.Context(), "u", tc.override)
			var nl *NoLLMError
			switch {
			case tc.missing != "":
				if !errors.As(err, &nl) || nl.Missing != tc.missing || !errors.Is(err, ErrNoLLM) {
					t.Fatalf("err %v, want missing %q", err, tc.missing)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("config %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolveLLMUserSettings(t *testing.T) {
	n := 7
	t.Run("the agent's tuning comes back", func(t *testing.T) {
		model := "gpt-4o"
		user := settings.Settings{LLMModel: &model, MaxIterations: &n}
		s := NewService(Options{Settings: fakeSettings{values: &user, key: "sk-user"}})
		defer s.Close()
		_, got, err := s.resolveLLM(t.Context(), "u", nil)
		if err != nil || got.MaxIterations == nil || *got.MaxIterations != n {
			t.Fatalf("settings %+v, %v; want max_iterations %d", got, err, n)
		}
	})
	t.Run("unreadable settings are an error, not missing ones", func(t *testing.T) {
		corrupt := &settings.CorruptError{Field: "max_iterations", Err: errors.New("json: cannot unmarshal string into int")}
		s := NewService(Options{Settings: fakeSettings{err: corrupt}, LLM: LLMDefaults{Model: "m", APIKey: "k"}})
		defer s.Close()
		_, _, err := s.resolveLLM(t.Context(), "u", nil)
		var ce *settings.CorruptError
		if !errors.As(err, &ce) || ce.Field != "max_iterations" || errors.Is(err, ErrNoLLM) {
			t.Fatalf("err %v, want the settings' corruption", err)
		}
	})
}

func TestResolveLLMDefaultPolicyRefusesInternalAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the internal server was reached")
	}))
	defer srv.Close()
	base, model := srv.URL+"/v1", "gpt-4o"
	s := NewService(Options{Settings: fakeSettings{values: &settings.Settings{LLMBaseURL: &base, LLMModel: &model}}})
	defer s.Close()
	cfg, _, err := s.resolveLLM(t.Context(), "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Client().Get(srv.URL)
	var re *netpolicy.RefusedError
	if !errors.As(err, &re) || re.Class != netpolicy.Loopback {
		t.Fatalf("GET %s with the user's client: %v, want a loopback refusal", srv.URL, err)
	}
}
