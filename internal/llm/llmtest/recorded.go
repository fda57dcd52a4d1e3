package llmtest

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/internal/llm"
)

// RecordedRequest is one request a Server received, decoded back into llm terms so that the
// same assertions hold for every protocol. Body keeps the exact JSON for assertions on the
// wire shape.
type RecordedRequest struct {
	Method, Path string
	Header       http.Header
	// APIKey is the credential received: the Bearer token (OpenAI) or x-api-key (Anthropic).
	APIKey string
	// RemoteAddr is the client's address, which tells several clients apart.
	RemoteAddr string
	// Body is the request body as received, and ContentLength its length as the request
	// announced it (-1 when it did not, as with a chunked body).
	Body          []byte
	ContentLength int64

	Model string
	// System is the system text: Anthropic's system field, or the text of OpenAI's system
	// and developer messages, joined by blank lines.
	System string
	// Messages are the other messages. An Anthropic user message holding tool_result blocks
	// comes back as one RoleTool message per block (then a RoleUser message for the rest);
	// image parts carry the URL sent, with base64 sources rebuilt as data URLs.
	Messages    []llm.Message
	Tools       []llm.ToolSpec
	MaxTokens   int
	Temperature *float64
}

// Last returns the last message of the request, or a zero Message.
func (r RecordedRequest) Last() llm.Message {
	if len(r.Messages) == 0 {
		return llm.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Decode unmarshals the body into v, for assertions on the exact wire shape.
func (r RecordedRequest) Decode(v any) error { return json.Unmarshal(r.Body, v) }
