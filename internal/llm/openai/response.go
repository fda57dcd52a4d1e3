package openai

import (
	"fmt"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/openai/openai-go/v3"
)

// response converts a completion. A reply without choices is a KindServer error, so that
// it is retried, as OpenHands retries empty replies.
func response(out *sdk.ChatCompletion) (llm.Response, error) {
	if out == nil || len(out.Choices) == 0 {
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Msg: "the reply has no choices"}
	}
	choice := out.Choices[0]
	msg := llm.Message{Role: llm.RoleAssistant}
	switch {
	case choice.Message.Content != "":
		msg.Parts = []llm.Part{llm.TextPart(choice.Message.Content)}
	case choice.Message.Refusal != "":
		msg.Parts = []llm.Part{llm.TextPart(choice.Message.Refusal)}
	}
	for i, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered
		}
		id := tc.ID
		if id == "" {
			// Some compatible servers omit ids; the tool result must name its call.
			id = fmt.Sprintf("call_%s_%d", out.ID, i)
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	u := out.Usage
	return llm.Response{
		Message: msg,
		Usage: llm.Usage{
			PromptTokens:     u.PromptTokens,
			CompletionTokens: u.CompletionTokens,
			CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
			CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
			ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
		},
		FinishReason: choice.FinishReason,
		ResponseID:   out.ID,
		Model:        out.Model,
	}, nil
}
