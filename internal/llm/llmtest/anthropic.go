package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/llm"
)

// anthropicProtocol is Anthropic messages, non-streaming.
type anthropicProtocol struct{}

func (anthropicProtocol) name() string { return llm.ProviderAnthropic }

func (anthropicProtocol) paths() []string { return []string{"/v1/messages"} }

func (anthropicProtocol) baseURL(root string) string { return root }

func (anthropicProtocol) apiKey(r *http.Request) string { return r.Header.Get("X-Api-Key") }

type antRequest struct {
	Model       string          `json:"model"`
	System      json.RawMessage `json:"system"` // a string or a list of text blocks
	Messages    []antMessage    `json:"messages"`
	Tools       []antTool       `json:"tools"`
	MaxTokens   int             `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
}

type antMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type antBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source struct {
		Type      string `json:"type"`
		URL       string `json:"url"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or a list of blocks
	IsError   bool            `json:"is_error"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func (anthropicProtocol) decode(body []byte) (RecordedRequest, error) {
	var in antRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return RecordedRequest{}, err
	}
	rec := RecordedRequest{Model: in.Model, MaxTokens: in.MaxTokens, Temperature: in.Temperature}
	system, err := antBlocks(in.System)
	if err != nil {
		return RecordedRequest{}, fmt.Errorf("system: %w", err)
	}
	var texts []string
	for _, b := range system {
		texts = append(texts, b.Text)
	}
	rec.System = strings.Join(texts, "\n\n")
	for i, m := range in.Messages {
		blocks, err := antBlocks(m.Content)
		if err != nil {
			return RecordedRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msgs, err := antMessages(llm.Role(m.Role), blocks)
		if err != nil {
			return RecordedRequest{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
		rec.Messages = append(rec.Messages, msgs...)
	}
	for _, t := range in.Tools {
		rec.Tools = append(rec.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return rec, nil
}

// antMessages turns one wire message into llm messages: each tool_result block becomes a
// RoleTool message, and each run of other blocks one message of role.
func antMessages(role llm.Role, blocks []antBlock) ([]llm.Message, error) {
	var out []llm.Message
	cur := llm.Message{Role: role}
	flush := func() {
		if len(cur.Parts) > 0 || len(cur.ToolCalls) > 0 {
			out = append(out, cur)
		}
		cur = llm.Message{Role: role}
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			flush()
			inner, err := antBlocks(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result content: %w", err)
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Parts: antParts(inner)})
		case "tool_use":
			cur.ToolCalls = append(cur.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		default:
			cur.Parts = append(cur.Parts, antParts([]antBlock{b})...)
		}
	}
	flush()
	return out, nil
}

func antParts(blocks []antBlock) []llm.Part {
	var parts []llm.Part
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			parts = append(parts, llm.TextPart(b.Text))
		case b.Type == "image" && b.Source.Type == "url":
			parts = append(parts, llm.ImagePart(b.Source.URL))
		case b.Type == "image" && b.Source.Type == "base64":
			parts = append(parts, llm.ImagePart("data:"+b.Source.MediaType+";base64,"+b.Source.Data))
		default:
			parts = append(parts, llm.Part{Type: b.Type})
		}
	}
	return parts
}

func antBlocks(raw json.RawMessage) ([]antBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []antBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []antBlock
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

func (anthropicProtocol) reply(w http.ResponseWriter, req RecordedRequest, r Reply, n int) {
	content := []any{}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.ToolCalls {
		id := cmp.Or(c.ID, fmt.Sprintf("toolu_llmtest_%d_%d", n, i+1))
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) {
			// The API only ever returns JSON input; carry scripted junk as a JSON string.
			input, _ = json.Marshal(c.Arguments)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
	}
	stop := r.FinishReason
	if stop == "" {
		stop = "end_turn"
		if len(r.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	u := r.Usage
	writeJSON(w, http.StatusOK, map[string]any{
		"id":            cmp.Or(r.ID, fmt.Sprintf("msg_llmtest_%d", n)),
		"type":          "message",
		"role":          "assistant",
		"model":         cmp.Or(r.Model, req.Model),
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			// Anthropic counts cached input apart from input_tokens.
			"input_tokens":                u.PromptTokens - u.CacheReadTokens - u.CacheWriteTokens,
			"output_tokens":               u.CompletionTokens,
			"cache_read_input_tokens":     u.CacheReadTokens,
			"cache_creation_input_tokens": u.CacheWriteTokens,
			"output_tokens_details":       map[string]any{"thinking_tokens": u.ReasoningTokens},
		},
	})
}

// antErrorTypes are Anthropic's error types by status.
var antErrorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	529: "overloaded_error",
}

func (anthropicProtocol) fail(w http.ResponseWriter, e ErrorReply) {
	typ := cmp.Or(e.Type, antErrorTypes[e.Status], "api_error")
	msg := e.Message
	if msg == "" {
		switch {
		case e.Code == codeContextLength:
			msg = "prompt is too long: 210000 tokens > 200000 maximum"
		case e.Status == http.StatusTooManyRequests:
			msg = "Number of request tokens has exceeded your per-minute rate limit"
		default:
			msg = http.StatusText(e.Status)
		}
	}
	writeJSON(w, e.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
