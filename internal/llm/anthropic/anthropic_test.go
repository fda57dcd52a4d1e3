package anthropic_test

import (
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/anthropic"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

func TestConformance(t *testing.T) {
	llmtest.RunClientSuite(t, llmtest.Suite{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5", New: anthropic.New})
}
