package llm

import (
	"regexp"
	"slices"
	"strings"
)

// modelInfo is what agentd knows about a well-known model: prices in USD per million tokens
// and the context window in tokens.
type modelInfo struct {
	input, output, cacheRead, cacheWrite float64
	window                               int
}

// models holds a handful of well-known OpenAI and Anthropic models, by normalized name
// (see normalizeModel). Prices are list prices as published by the vendors; Anthropic's cache
// writes are the 5-minute rate, and OpenAI bills cache writes as ordinary input.
var models = map[string]modelInfo{
	"gpt-4o":       {2.50, 10.00, 1.25, 2.50, 128_000},
	"gpt-4o-mini":  {0.15, 0.60, 0.075, 0.15, 128_000},
	"gpt-4.1":      {2.00, 8.00, 0.50, 2.00, 1_047_576},
	"gpt-4.1-mini": {0.40, 1.60, 0.10, 0.40, 1_047_576},
	"gpt-4.1-nano": {0.10, 0.40, 0.025, 0.10, 1_047_576},
	"o3":           {2.00, 8.00, 0.50, 2.00, 200_000},
	"o3-mini":      {1.10, 4.40, 0.55, 1.10, 200_000},
	"o4-mini":      {1.10, 4.40, 0.275, 1.10, 200_000},
	"gpt-5":        {1.25, 10.00, 0.125, 1.25, 400_000},
	"gpt-5-mini":   {0.25, 2.00, 0.025, 0.25, 400_000},
	"gpt-5-nano":   {0.05, 0.40, 0.005, 0.05, 400_000},

	"claude-3-5-haiku":  {0.80, 4.00, 0.08, 1.00, 200_000},
	"claude-3-5-sonnet": {3.00, 15.00, 0.30, 3.75, 200_000},
	"claude-3-7-sonnet": {3.00, 15.00, 0.30, 3.75, 200_000},
	"claude-sonnet-4":   {3.00, 15.00, 0.30, 3.75, 200_000},
	"claude-sonnet-4-5": {3.00, 15.00, 0.30, 3.75, 200_000},
	"claude-haiku-4-5":  {1.00, 5.00, 0.10, 1.25, 200_000},
	"claude-opus-4":     {15.00, 75.00, 1.50, 18.75, 200_000},
	"claude-opus-4-1":   {15.00, 75.00, 1.50, 18.75, 200_000},
	"claude-opus-4-5":   {5.00, 25.00, 0.50, 6.25, 200_000},
}

// windowFamilies give the context window of models not in the table by name prefix.
var windowFamilies = []struct {
	prefix string
	window int
}{
	{"gpt-5", 400_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"o3", 200_000},
	{"o4", 200_000},
	{"claude-", 200_000},
}

// DefaultContextWindow is the context window assumed for models agentd does not know.
const DefaultContextWindow = 128_000

// dateSuffix matches the snapshot dates vendors append: "-20250929", "-2024-08-06",
// "@20250929" (Vertex), and "-latest".
var dateSuffix = regexp.MustCompile(`([-@]\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$`)

// normalizeModel reduces a model name to its table key: lower case, without any routing
// prefix ("openai/", "openrouter/anthropic/"), and without a snapshot date.
func normalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	return dateSuffix.ReplaceAllString(m, "")
}

// ContextWindow returns the model's context window in tokens: from the table for known
// models, by family for their relatives ("claude-*" is 200k), else DefaultContextWindow.
func ContextWindow(model string) int {
	m := normalizeModel(model)
	if info, ok := models[m]; ok {
		return info.window
	}
	for _, f := range windowFamilies {
		if strings.HasPrefix(m, f.prefix) {
			return f.window
		}
	}
	return DefaultContextWindow
}

// Cost returns the USD price of one call's usage. Unknown models, including every local
// model, cost 0: agentd does not guess prices.
func Cost(model string, u Usage) float64 {
	info, ok := models[normalizeModel(model)]
	if !ok {
		return 0
	}
	uncached := max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(uncached)*info.input +
		float64(u.CacheReadTokens)*info.cacheRead +
		float64(u.CacheWriteTokens)*info.cacheWrite +
		float64(u.CompletionTokens)*info.output) / 1e6
}

// KnownModels returns the models agentd knows the window and prices of, each as
// "provider/name" (openai/gpt-4o, anthropic/claude-sonnet-4-5), sorted. A name of this form
// works as a user's llm_model: Resolve strips the prefix. Other names work too; these are
// the ones offered to clients that show a list.
func KnownModels() []string {
	out := make([]string, 0, len(models))
	for name := range models {
		out = append(out, InferProvider(name)+"/"+name)
	}
	slices.Sort(out)
	return out
}

// Providers are the wire protocols agentd speaks, sorted.
func Providers() []string { return []string{ProviderAnthropic, ProviderOpenAI} }

// visionFamilies are the name prefixes of models that take images, among those agentd knows
// (see AcceptsImages); noVision the exceptions within them.
var (
	visionFamilies = []string{"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5", "o1", "o3", "o4", "claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "gemini-"}
	noVision       = []string{"o1-mini", "o3-mini"}
)

// AcceptsImages reports whether the model takes images in its input: the well-known OpenAI,
// Anthropic and Gemini models that do. Any other model is sent no images, only their
// description in text, as a server that takes none would refuse the request.
func AcceptsImages(model string) bool {
	m := normalizeModel(model)
	for _, p := range noVision {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	for _, p := range visionFamilies {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}
