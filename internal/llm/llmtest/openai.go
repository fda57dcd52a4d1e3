package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/llm"
)

// openaiProtocol is OpenAI chat completions, non-streaming.
type openaiProtocol struct{}

func (openaiProtocol) name() string { return llm.ProviderOpenAI }

func (openaiProtocol) paths() []string { return []string{"/v1/chat/completions", "/chat/completions"} }

func (openaiProtocol) baseURL(root string) string { return root + "/v1" }

func (openaiProtocol) apiKey(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

type oaiRequest struct {
	Model               string       `json:"model"`
	Messages            []oaiMessage `json:"messages"`
	Tools               []oaiTool    `json:"tools"`
	MaxTokens           int          `json:"max_tokens"`
	MaxCompletionTokens int          `json:"max_completion_tokens"`
	Temperature         *float64     `json:"temperature"`
}

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string or a list of parts
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
}

type oaiPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (openaiProtocol) decode(body []byte) (RecordedRequest, error) {
	var in oaiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return RecordedRequest{}, err
	}
	rec := RecordedRequest{Model: in.Model, MaxTokens: in.MaxTokens, Temperature: in.Temperature}
	if in.MaxCompletionTokens != 0 {
		rec.MaxTokens = in.MaxCompletionTokens
	}
	var system []string
	for i, m := range in.Messages {
		parts, err := oaiParts(m.Content)
		if err != nil {
			return RecordedRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		if m.Role == "system" || m.Role == "developer" {
			system = append(system, llm.Message{Parts: parts}.Text())
			continue
		}
		msg := llm.Message{Role: llm.Role(m.Role), Parts: parts, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		rec.Messages = append(rec.Messages, msg)
	}
	rec.System = strings.Join(system, "\n\n")
	for _, t := range in.Tools {
		rec.Tools = append(rec.Tools, llm.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return rec, nil
}

func oaiParts(raw json.RawMessage) ([]llm.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []llm.Part{llm.TextPart(s)}, nil
	}
	var in []oaiPart
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	parts := make([]llm.Part, 0, len(in))
	for _, p := range in {
		switch p.Type {
		case "text":
			parts = append(parts, llm.TextPart(p.Text))
		case "image_url":
			parts = append(parts, llm.ImagePart(p.ImageURL.URL))
		default:
			parts = append(parts, llm.Part{Type: p.Type})
		}
	}
	return parts, nil
}

func (openaiProtocol) reply(w http.ResponseWriter, req RecordedRequest, r Reply, n int) {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if r.Text != "" {
		msg["content"] = r.Text
	}
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_llmtest_%d_%d", n, i+1)
			}
			calls[i] = map[string]any{
				"id":       id,
				"type":     "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			}
		}
		msg["tool_calls"] = calls
		if r.FinishReason == "" {
			finish = "tool_calls"
		}
	}
	u := r.Usage
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      cmp.Or(r.ID, fmt.Sprintf("chatcmpl-llmtest-%d", n)),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   cmp.Or(r.Model, req.Model),
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"finish_reason": finish,
			"logprobs":      nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":     u.PromptTokens,
			"completion_tokens": u.CompletionTokens,
			"total_tokens":      u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]any{
				"cached_tokens":      u.CacheReadTokens,
				"cache_write_tokens": u.CacheWriteTokens,
			},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		},
	})
}

func (openaiProtocol) fail(w http.ResponseWriter, e ErrorReply) {
	typ, code, msg := e.Type, e.Code, e.Message
	if typ == "" {
		switch {
		case e.Status == http.StatusTooManyRequests:
			typ = "requests"
		case e.Status >= 500:
			typ = "server_error"
		default:
			typ = "invalid_request_error"
		}
	}
	if code == "" && e.Status == http.StatusTooManyRequests {
		code = "rate_limit_exceeded"
	}
	if msg == "" {
		switch {
		case code == codeContextLength:
			msg = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."
		case e.Status == http.StatusTooManyRequests:
			msg = "Rate limit reached for requests. Please try again later."
		default:
			msg = http.StatusText(e.Status)
		}
	}
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
