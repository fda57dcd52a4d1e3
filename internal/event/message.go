package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimestampLayout is how event timestamps are written: ISO 8601 with microseconds, in UTC
// without a zone suffix, as OpenHands agent servers write them.
const TimestampLayout = "2006-01-02T15:04:05.000000"

// KindMessage is the kind of a message event.
const KindMessage = "MessageEvent"

// TextPart and ImagePart are the content parts of an LLM message.
type TextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ImagePart carries image URLs (http(s) or data: URLs).
type ImagePart struct {
	Type      string   `json:"type"`
	ImageURLs []string `json:"image_urls"`
}

// LLMMessage is a message as the model sees it.
type LLMMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// MessageEvent is a message from the user or the agent.
type MessageEvent struct {
	Kind            string     `json:"kind"`
	ID              string     `json:"id"`
	Timestamp       string     `json:"timestamp"`
	Source          string     `json:"source"`
	LLMMessage      LLMMessage `json:"llm_message"`
	ActivatedSkills []string   `json:"activated_skills"`
	ExtendedContent []any      `json:"extended_content"`
}

// NewUserMessage builds the event for a user message with optional images.
func NewUserMessage(id string, at time.Time, text string, imageURLs []string) (Event, error) {
	content := []any{}
	if text != "" || len(imageURLs) == 0 {
		content = append(content, TextPart{Type: "text", Text: text})
	}
	if len(imageURLs) > 0 {
		content = append(content, ImagePart{Type: "image", ImageURLs: imageURLs})
	}
	at = at.UTC()
	m := MessageEvent{
		Kind: KindMessage, ID: id, Timestamp: at.Format(TimestampLayout), Source: SourceUser,
		LLMMessage:      LLMMessage{Role: "user", Content: content},
		ActivatedSkills: []string{}, ExtendedContent: []any{},
	}
	body, err := json.Marshal(m)
	if err != nil {
		return Event{}, fmt.Errorf("encode message event: %w", err)
	}
	return Event{ID: id, Kind: KindMessage, Source: SourceUser, Timestamp: at, Body: body}, nil
}
