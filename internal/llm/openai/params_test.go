package openai

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/llm"
)

// TestMaxTokensParameter checks which cap is sent: OpenAI's reasoning models accept only
// max_completion_tokens, while compatible servers know max_tokens.
func TestMaxTokensParameter(t *testing.T) {
	for _, tc := range []struct {
		baseURL, want string
	}{
		{"", "max_completion_tokens"},
		{"https://api.openai.com/v1", "max_completion_tokens"},
		{"http://localhost:11434/v1", "max_tokens"},
		{"https://openrouter.ai/api/v1", "max_tokens"},
	} {
		c, err := New(llm.Config{Model: "o4-mini", BaseURL: tc.baseURL})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.(*client).params(llm.Request{MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(p)
		var fields map[string]any
		_ = json.Unmarshal(body, &fields)
		_, hasMax := fields["max_tokens"]
		_, hasCompletion := fields["max_completion_tokens"]
		if got := map[bool]string{true: "max_completion_tokens", false: "max_tokens"}[hasCompletion]; got != tc.want || hasMax == hasCompletion {
			t.Errorf("base URL %q: sent %s, want only %s", tc.baseURL, body, tc.want)
		}
	}
}
