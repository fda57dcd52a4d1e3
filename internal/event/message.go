package event

import (
	"encoding/json"
	"strings"
	"time"
)

// TimestampLayout is how event timestamps are written: ISO 8601 with microseconds, in UTC
// without a zone suffix, as OpenHands agent servers write them.
const TimestampLayout = "2006-01-02T15:04:05.000000"

// TextPart and ImagePart are the content parts of an LLM message.
type TextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Text returns a text part.
func Text(s string) TextPart { return TextPart{Type: "text", Text: s} }

// ImagePart carries image URLs (http(s) or data: URLs).
type ImagePart struct {
	Type      string   `json:"type"`
	ImageURLs []string `json:"image_urls"`
}

// LLMMessage is a message as the model sees it. Content holds TextPart and ImagePart values
// when built, and decoded JSON objects when read back; Texts and ImageURLs read either.
type LLMMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// MessageEvent is a message from the user, the agent, or the environment (a nudge the agent
// loop sends the model in the user's turn).
type MessageEvent struct {
	Base
	LLMMessage      LLMMessage `json:"llm_message"`
	ActivatedSkills []string   `json:"activated_skills"`
	ExtendedContent []any      `json:"extended_content"`
	// LLMResponseID names the model response an agent message came from.
	LLMResponseID string `json:"llm_response_id,omitempty"`
}

func (*MessageEvent) eventKind() string { return KindMessage }

// Texts returns the text of the message's text parts, in order.
func (m *MessageEvent) Texts() []string {
	var out []string
	for _, c := range m.LLMMessage.Content {
		switch p := c.(type) {
		case TextPart:
			out = append(out, p.Text)
		case map[string]any:
			if p["type"] == "text" {
				s, _ := p["text"].(string)
				out = append(out, s)
			}
		}
	}
	return out
}

// ImageURLs returns the URLs of the message's image parts, in order.
func (m *MessageEvent) ImageURLs() []string {
	var out []string
	for _, c := range m.LLMMessage.Content {
		switch p := c.(type) {
		case ImagePart:
			out = append(out, p.ImageURLs...)
		case map[string]any:
			if p["type"] == "image" {
				urls, _ := p["image_urls"].([]any)
				for _, u := range urls {
					if s, ok := u.(string); ok {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// messageContent builds the content list of a message.
func messageContent(text string, imageURLs []string) []any {
	content := []any{}
	if text != "" || len(imageURLs) == 0 {
		content = append(content, Text(text))
	}
	if len(imageURLs) > 0 {
		content = append(content, ImagePart{Type: "image", ImageURLs: imageURLs})
	}
	return content
}

// NewUserMessage builds the event for a user message with optional images.
func NewUserMessage(id string, at time.Time, text string, imageURLs []string) (Event, error) {
	return New(id, at, SourceUser, &MessageEvent{
		LLMMessage:      LLMMessage{Role: "user", Content: messageContent(text, imageURLs)},
		ActivatedSkills: []string{}, ExtendedContent: []any{},
	})
}

// NewAgentMessage builds the event for a message the agent writes to the user.
func NewAgentMessage(id string, at time.Time, text, responseID string) (Event, error) {
	return New(id, at, SourceAgent, &MessageEvent{
		LLMMessage:      LLMMessage{Role: "assistant", Content: []any{Text(text)}},
		ActivatedSkills: []string{}, ExtendedContent: []any{}, LLMResponseID: responseID,
	})
}

// NewEnvironmentMessage builds a message the agent loop itself sends the model in the user's
// turn, such as a reminder to call a tool.
func NewEnvironmentMessage(id string, at time.Time, text string) (Event, error) {
	return New(id, at, SourceEnvironment, &MessageEvent{
		LLMMessage:      LLMMessage{Role: "user", Content: []any{Text(text)}},
		ActivatedSkills: []string{}, ExtendedContent: []any{},
	})
}

// BodyText is the text a search by body looks in (see Filter.Body), as OpenHands agent
// servers search it: a MessageEvent's text parts, its extended content and its reasoning,
// joined by spaces. Other kinds, and bodies that do not decode, have none.
func BodyText(kind string, body []byte) string {
	if kind != KindMessage {
		return ""
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var m struct {
		LLMMessage struct {
			Content          []part `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"llm_message"`
		ExtendedContent []part `json:"extended_content"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	var texts []string
	for _, p := range append(m.LLMMessage.Content, m.ExtendedContent...) {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	if m.LLMMessage.ReasoningContent != "" {
		texts = append(texts, m.LLMMessage.ReasoningContent)
	}
	return strings.Join(texts, " ")
}
