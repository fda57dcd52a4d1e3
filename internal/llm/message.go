package llm

import "encoding/json"

// Role is who speaks a message.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of one tool call; see Message.ToolCallID
)

// Part types.
const (
	PartText  = "text"
	PartImage = "image"
)

// Part is one piece of a message's content: text, or an image given by URL.
type Part struct {
	Type string // PartText or PartImage
	Text string
	// ImageURL is an http(s) URL or a data URL ("data:image/png;base64,...").
	ImageURL string
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// ImagePart returns an image part for an http(s) or data URL.
func ImagePart(url string) Part { return Part{Type: PartImage, ImageURL: url} }

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text as the model produced it. It may be malformed: the agent,
	// not the adapter, decides what to do with arguments that do not parse.
	Arguments string
}

// Message is one turn of a conversation.
type Message struct {
	Role  Role
	Parts []Part
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string
	// Name is the tool's name on a RoleTool message, or an optional participant name.
	Name string
}

// Text returns the message's text parts joined by newlines.
func (m Message) Text() string {
	var s string
	for _, p := range m.Parts {
		if p.Type != PartText {
			continue
		}
		if s != "" {
			s += "\n"
		}
		s += p.Text
	}
	return s
}

// ToolSpec describes one tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object ({"type":"object","properties":...}). Empty means
	// a tool without parameters.
	Parameters json.RawMessage
}

// Request is one completion request.
type Request struct {
	// Model overrides the client's configured model for this call and is sent as given.
	// Empty means the configured model.
	Model string
	// System is extra system text. It is sent before any RoleSystem message in Messages.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// MaxTokens caps the reply. Zero means the provider's default; the Anthropic adapter,
	// whose API requires a cap, then sends 8192.
	MaxTokens int
	// Temperature is nil for the provider's default.
	Temperature *float64
}

// Usage counts the tokens of one call.
type Usage struct {
	// PromptTokens counts every input token, including those read from or written to the
	// prompt cache (Anthropic reports those apart; the adapter adds them in).
	PromptTokens     int64
	CompletionTokens int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	// ReasoningTokens is the part of CompletionTokens spent on hidden reasoning.
	ReasoningTokens int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Finish reasons, in OpenAI's vocabulary; the Anthropic adapter maps its stop reasons onto
// them (end_turn and stop_sequence → stop, tool_use → tool_calls, max_tokens → length,
// refusal → content_filter). Other values pass through unchanged.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Response is the model's reply to one Request.
type Response struct {
	// Message is the assistant's message: text parts and tool calls.
	Message      Message
	Usage        Usage
	FinishReason string
	ResponseID   string
	// Model is the model that answered, as the provider names it.
	Model string
}
