package anthropic

import (
	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/anthropics/anthropic-sdk-go"
)

// finishReasons maps Anthropic's stop reasons onto llm's finish reasons.
var finishReasons = map[sdk.StopReason]string{
	sdk.StopReasonEndTurn:                    llm.FinishStop,
	sdk.StopReasonStopSequence:               llm.FinishStop,
	sdk.StopReasonToolUse:                    llm.FinishToolCalls,
	sdk.StopReasonMaxTokens:                  llm.FinishLength,
	sdk.StopReasonModelContextWindowExceeded: llm.FinishLength,
	sdk.StopReasonRefusal:                    llm.FinishContentFilter,
}

// response converts a reply: text and tool_use blocks; thinking blocks are not kept.
func response(out *sdk.Message) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	for _, b := range out.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				msg.Parts = append(msg.Parts, llm.TextPart(b.Text))
			}
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		}
	}
	finish, ok := finishReasons[out.StopReason]
	if !ok {
		finish = string(out.StopReason)
	}
	u := out.Usage
	return llm.Response{
		Message: msg,
		Usage: llm.Usage{
			// Anthropic's input_tokens leaves out the cached part; llm counts all input.
			PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			CompletionTokens: u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
			ReasoningTokens:  u.OutputTokensDetails.ThinkingTokens,
		},
		FinishReason: finish,
		ResponseID:   out.ID,
		Model:        string(out.Model),
	}
}
