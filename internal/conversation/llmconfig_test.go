package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/settings"
)

// fakeSettings are one user's settings.
type fakeSettings struct {
	values map[string]any
	key    string
}

func (f fakeSettings) Get(context.Context, string) (settings.View, error) {
	if f.values == nil {
		return settings.View{}, settings.ErrNotFound
	}
	v := settings.View{Values: map[string]json.RawMessage{}}
	for k, x := range f.values {
		v.Values[k], _ = json.Marshal(x)
	}
	return v, nil
}

func (f fakeSettings) Secret(context.Context, string, string) (string, bool, error) {
	return f.key, f.key != "", nil
}

func TestResolveLLM(t *testing.T) {
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
		{"the user's model and key on the server's endpoint", server, fakeSettings{values: map[string]any{"llm_model": "gpt-4o"}, key: "sk-user"}, nil,
			llm.Config{Provider: "anthropic", Model: "gpt-4o", BaseURL: "https://proxy.internal", APIKey: "sk-user"}, ""},
		{"a user's endpoint never gets the server's key", server, fakeSettings{values: map[string]any{"llm_base_url": "http://127.0.0.1:11434/v1", "llm_model": "qwen"}}, nil,
			llm.Config{Model: "qwen", BaseURL: "http://127.0.0.1:11434/v1"}, ""},
		{"the start request's model wins", server, fakeSettings{values: map[string]any{"llm_model": "gpt-4o"}}, model("o3"),
			llm.Config{Provider: "anthropic", Model: "o3", BaseURL: "https://proxy.internal", APIKey: "sk-server"}, ""},
		{"nothing anywhere", LLMDefaults{}, fakeSettings{}, nil, llm.Config{}, "no model is set"},
		{"a public API without a key", LLMDefaults{}, fakeSettings{values: map[string]any{"llm_model": "gpt-4o"}}, nil,
			llm.Config{Model: "gpt-4o"}, "no API key is set for model gpt-4o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService(Options{Settings: tc.user, LLM: tc.defaults})
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
