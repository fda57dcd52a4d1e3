package openai_test

import (
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/llm/openai"
)

func TestConformance(t *testing.T) {
	llmtest.RunClientSuite(t, llmtest.Suite{Provider: llm.ProviderOpenAI, Model: "gpt-4o", New: openai.New})
}
