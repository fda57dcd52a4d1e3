package llm

import (
	"math"
	"testing"
)

func TestNormalizeModel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gpt-4o", "gpt-4o"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"openai/GPT-4o-mini", "gpt-4o-mini"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5"},
		{"anthropic/claude-3-5-haiku-latest", "claude-3-5-haiku"},
		{"openrouter/anthropic/claude-opus-4-1", "claude-opus-4-1"},
	} {
		if got := normalizeModel(tc.in); got != tc.want {
			t.Errorf("normalizeModel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCost(t *testing.T) {
	for _, tc := range []struct {
		model string
		u     Usage
		want  float64
	}{
		// 1M input at $2.50 and 1M output at $10.
		{"gpt-4o", Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 12.50},
		// 600k uncached at $2.50, 400k cached at $1.25, 100k out at $10.
		{"gpt-4o-2024-08-06", Usage{PromptTokens: 1_000_000, CacheReadTokens: 400_000, CompletionTokens: 100_000}, 1.5 + 0.5 + 1.0},
		// 10k uncached at $3, 80k read at $0.30, 10k written at $3.75, 2k out at $15.
		{"claude-sonnet-4-5-20250929", Usage{PromptTokens: 100_000, CacheReadTokens: 80_000, CacheWriteTokens: 10_000, CompletionTokens: 2_000}, 0.03 + 0.024 + 0.0375 + 0.03},
		{"anthropic/claude-opus-4-1", Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0.015 + 0.075},
		{"qwen2.5-coder:32b", Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 0},
		{"gpt-4o", Usage{}, 0},
	} {
		if got := Cost(tc.model, tc.u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%q, %+v) = %v, want %v", tc.model, tc.u, got, tc.want)
		}
	}
}

func TestContextWindow(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{
		{"gpt-4o", 128_000},
		{"gpt-4.1-mini-2025-04-14", 1_047_576},
		{"gpt-5-codex", 400_000},
		{"o4-mini", 200_000},
		{"claude-sonnet-4-5", 200_000},
		{"claude-future-9", 200_000},
		{"llama3.1:8b", DefaultContextWindow},
	} {
		if got := ContextWindow(tc.model); got != tc.want {
			t.Errorf("ContextWindow(%q) = %d, want %d", tc.model, got, tc.want)
		}
	}
}

func TestAcceptsImages(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  bool
	}{
		{"gpt-4o", true},
		{"openai/gpt-4.1-mini-2025-04-14", true},
		{"anthropic/claude-sonnet-4-5-20250929", true},
		{"claude-3-5-haiku-latest", true},
		{"o3-mini", false},
		{"o3", true},
		{"gpt-3.5-turbo", false},
		{"llama3.1:8b", false},
		{"", false},
	} {
		if got := AcceptsImages(tc.model); got != tc.want {
			t.Errorf("AcceptsImages(%q) = %v, want %v", tc.model, got, tc.want)
		}
	}
}
