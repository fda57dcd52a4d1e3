package config

import (
	"strings"
	"testing"
)

func TestLLMOptions(t *testing.T) {
	c, err := Load([]string{"--llm-provider", "Anthropic"}, env(map[string]string{
		"AGENTD_LLM_MODEL": " claude-sonnet-4-5 ", "AGENTD_LLM_BASE_URL": "http://127.0.0.1:8080/v1/",
		"AGENTD_LLM_API_KEY": "sk-server",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.LLMModel != "claude-sonnet-4-5" || c.LLMBaseURL != "http://127.0.0.1:8080/v1" || c.LLMAPIKey != "sk-server" || c.LLMProvider != "anthropic" {
		t.Fatalf("LLM settings %q %q %q %q", c.LLMModel, c.LLMBaseURL, c.LLMAPIKey, c.LLMProvider)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"AGENTD_LLM_PROVIDER", "gemini", "llm provider \"gemini\": want openai or anthropic"},
		{"AGENTD_LLM_BASE_URL", "localhost:11434", "llm base url \"localhost:11434\": want an http(s) URL"},
	} {
		_, err := Load(nil, env(map[string]string{tc.name: tc.value}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	for _, o := range Options() {
		if o.Flag == "llm-api-key" && !o.Secret {
			t.Error("the LLM API key is not marked secret")
		}
	}
}
