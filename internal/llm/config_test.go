package llm

import "testing"

func TestInferProvider(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"claude-sonnet-4-5", ProviderAnthropic},
		{"Claude-3-5-Haiku-latest", ProviderAnthropic},
		{"anthropic/claude-opus-4-1", ProviderAnthropic},
		{"gpt-4o", ProviderOpenAI},
		{"openai/gpt-4o", ProviderOpenAI},
		{"litellm_proxy/claude-sonnet-4", ProviderOpenAI},
		{"openrouter/anthropic/claude-sonnet-4", ProviderOpenAI},
		{"qwen2.5-coder:7b", ProviderOpenAI},
		{"meta-llama/Llama-3.1-8B-Instruct", ProviderOpenAI},
		{"", ProviderOpenAI},
	} {
		if got := InferProvider(tc.model); got != tc.want {
			t.Errorf("InferProvider(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		in              Config
		provider, model string
	}{
		{Config{Model: "anthropic/claude-sonnet-4-5"}, ProviderAnthropic, "claude-sonnet-4-5"},
		{Config{Model: "claude-sonnet-4-5"}, ProviderAnthropic, "claude-sonnet-4-5"},
		{Config{Model: "openai/gpt-4o"}, ProviderOpenAI, "gpt-4o"},
		{Config{Model: "litellm_proxy/claude-sonnet-4"}, ProviderOpenAI, "claude-sonnet-4"},
		{Config{Model: "llama3.1"}, ProviderOpenAI, "llama3.1"},
		// An explicit provider sends the model as given: OpenRouter's names carry a vendor.
		{Config{Provider: ProviderOpenAI, Model: "anthropic/claude-sonnet-4"}, ProviderOpenAI, "anthropic/claude-sonnet-4"},
		{Config{Provider: ProviderAnthropic, Model: "anthropic/claude-sonnet-4"}, ProviderAnthropic, "anthropic/claude-sonnet-4"},
	} {
		got := tc.in.Resolve()
		if got.Provider != tc.provider || got.Model != tc.model {
			t.Errorf("%+v.Resolve() = %q %q, want %q %q", tc.in, got.Provider, got.Model, tc.provider, tc.model)
		}
		if got.Timeout != DefaultTimeout {
			t.Errorf("%+v.Resolve() timeout %v, want %v", tc.in, got.Timeout, DefaultTimeout)
		}
	}
}
