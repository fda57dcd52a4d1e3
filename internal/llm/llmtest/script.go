package llmtest

import (
	"net/http"

	"github.com/agentd/agentd/internal/llm"
)

// Step is the scripted answer to one request. Exactly one field is set.
type Step struct {
	// Reply answers with an assistant message.
	Reply *Reply
	// Error answers with an error status and the provider's error JSON.
	Error *ErrorReply
	// Func computes the step from the request, for replies that depend on what was sent.
	Func func(RecordedRequest) Step
	// HTTP answers the request itself: a malformed body, a slow reply, a dropped connection.
	HTTP http.HandlerFunc
}

// Reply is a successful completion.
type Reply struct {
	Text string
	// ToolCalls are returned as native tool calls; an empty ID is generated.
	ToolCalls []llm.ToolCall
	Usage     llm.Usage
	// FinishReason is sent as given; empty means the protocol's word for "stop", or for
	// "tool calls" when there are some.
	FinishReason string
	// ID is the response id; empty means a generated one.
	ID string
	// Model is the answering model; empty means the model of the request.
	Model string
}

// ErrorReply is an error response, sent in the provider's error JSON shape.
type ErrorReply struct {
	Status int
	// RetryAfter, if set, is sent as the Retry-After header.
	RetryAfter string
	// Type is the error type; empty means the provider's type for Status.
	Type string
	// Code is OpenAI's error code ("context_length_exceeded", "insufficient_quota").
	Code string
	// Message is the error message; empty means a provider-like one.
	Message string
}

// Code values with a meaning for the servers: ContextWindowExceeded gets the provider's own
// wording for a prompt that does not fit.
const codeContextLength = "context_length_exceeded"

// Text returns a step that replies with text.
func Text(s string) Step { return Step{Reply: &Reply{Text: s}} }

// Calls returns a step that replies with tool calls.
func Calls(calls ...llm.ToolCall) Step { return Step{Reply: &Reply{ToolCalls: calls}} }

// Call returns a tool call of name with JSON arguments, its ID left for the server to make.
func Call(name, arguments string) llm.ToolCall {
	return llm.ToolCall{Name: name, Arguments: arguments}
}

// Fail returns a step that answers status with message.
func Fail(status int, message string) Step {
	return Step{Error: &ErrorReply{Status: status, Message: message}}
}

// RateLimited returns a 429 step with the given Retry-After header ("" sends none).
func RateLimited(retryAfter string) Step {
	return Step{Error: &ErrorReply{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}}
}

// ContextWindowExceeded returns a 400 step saying, in the provider's words, that the prompt
// is longer than the model's context window.
func ContextWindowExceeded() Step {
	return Step{Error: &ErrorReply{Status: http.StatusBadRequest, Code: codeContextLength}}
}
