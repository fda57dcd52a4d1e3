package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of events, the class names OpenHands clients discriminate on.
const (
	KindSystemPrompt      = "SystemPromptEvent"
	KindMessage           = "MessageEvent"
	KindAction            = "ActionEvent"
	KindObservation       = "ObservationEvent"
	KindAgentError        = "AgentErrorEvent"
	KindStateUpdate       = "ConversationStateUpdateEvent"
	KindConversationError = "ConversationErrorEvent"
	KindPause             = "PauseEvent"
	KindCondensation      = "Condensation"
	KindSandboxPaused     = "SandboxPausedEvent"
	KindServerError       = "ServerErrorEvent"
)

// Keys of state update events.
const (
	StateExecutionStatus = "execution_status"
	StateStats           = "stats"
	// StateFull carries the whole state of a conversation. Streams open with it; it is
	// never stored.
	StateFull = "full_state"
)

// Base is what every event body starts with.
type Base struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Source    string `json:"source"`
}

func (b *Base) base() *Base { return b }

// Body is one of the event types of this package.
type Body interface {
	base() *Base
	eventKind() string
}

// New fills in the envelope of body (kind, id, timestamp, source) and encodes it as an Event.
func New(id string, at time.Time, source string, body Body) (Event, error) {
	at = at.UTC().Truncate(time.Microsecond)
	b := body.base()
	b.Kind, b.ID, b.Timestamp, b.Source = body.eventKind(), id, at.Format(TimestampLayout), source
	data, err := json.Marshal(body)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s: %w", b.Kind, err)
	}
	return Event{ID: id, Kind: b.Kind, Source: source, Timestamp: at, Body: data}, nil
}

// Decode reads an event's body into its type: *MessageEvent, *ActionEvent, and so on. Kinds
// this package does not know decode to *Base.
func Decode(e Event) (Body, error) {
	var b Body
	switch e.Kind {
	case KindSystemPrompt:
		b = new(SystemPromptEvent)
	case KindMessage:
		b = new(MessageEvent)
	case KindAction:
		b = new(ActionEvent)
	case KindObservation:
		b = new(ObservationEvent)
	case KindAgentError:
		b = new(AgentErrorEvent)
	case KindStateUpdate:
		b = new(StateUpdateEvent)
	case KindConversationError:
		b = new(ConversationErrorEvent)
	case KindPause:
		b = new(PauseEvent)
	case KindCondensation:
		b = new(Condensation)
	case KindSandboxPaused:
		b = new(SandboxPausedEvent)
	case KindServerError:
		b = new(ServerErrorEvent)
	case KindSkillWarning:
		b = new(SkillWarningEvent)
	case KindMCPServerError:
		b = new(MCPServerErrorEvent)
	case KindUserReject:
		b = new(UserRejectObservation)
	default:
		b = new(unknown)
	}
	if err := json.Unmarshal(e.Body, b); err != nil {
		return nil, fmt.Errorf("decode event %s (%s): %w", e.ID, e.Kind, err)
	}
	// The body repeats the event's id, kind and source: it holds the event's strings rather
	// than copies of its own, for those who keep many decoded bodies (an agent loop).
	bb := b.base()
	share(&bb.ID, e.ID)
	share(&bb.Kind, e.Kind)
	share(&bb.Source, e.Source)
	return b, nil
}

// share makes *dst hold s when they are equal.
func share(dst *string, s string) {
	if *dst == s {
		*dst = s
	}
}

type unknown struct{ Base }

func (u *unknown) eventKind() string { return u.Kind }

// SystemPromptEvent is the system prompt and the tools the agent was given.
type SystemPromptEvent struct {
	Base
	SystemPrompt TextPart `json:"system_prompt"`
	// Tools are the tool definitions, each an object with its kind, title and description.
	Tools          []json.RawMessage `json:"tools"`
	DynamicContext *TextPart         `json:"dynamic_context"`
}

func (*SystemPromptEvent) eventKind() string { return KindSystemPrompt }

// ToolCall is a tool call as the model made it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Origin    string `json:"origin"` // "completion"
}

// ActionEvent is one tool call of the agent. Action is the validated action object (with its
// kind, e.g. TerminalAction) or JSON null when the call was invalid.
type ActionEvent struct {
	Base
	Thought       []TextPart      `json:"thought"`
	Action        json.RawMessage `json:"action"`
	ToolName      string          `json:"tool_name"`
	ToolCallID    string          `json:"tool_call_id"`
	ToolCall      ToolCall        `json:"tool_call"`
	LLMResponseID string          `json:"llm_response_id"`
	SecurityRisk  string          `json:"security_risk"`
	Summary       *string         `json:"summary"`
}

func (*ActionEvent) eventKind() string { return KindAction }

// ObservationEvent is the result of an action. Observation is the tool's observation object
// (with its kind, e.g. TerminalObservation).
type ObservationEvent struct {
	Base
	Observation json.RawMessage `json:"observation"`
	ActionID    string          `json:"action_id"`
	ToolName    string          `json:"tool_name"`
	ToolCallID  string          `json:"tool_call_id"`
}

func (*ObservationEvent) eventKind() string { return KindObservation }

// AgentErrorEvent is a failed tool call: the model sees the error and may correct itself.
type AgentErrorEvent struct {
	Base
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	Error      string `json:"error"`
}

func (*AgentErrorEvent) eventKind() string { return KindAgentError }

// StateUpdateEvent (ConversationStateUpdateEvent) records a change of one field of the
// conversation's state: the execution status, or the LLM usage statistics.
type StateUpdateEvent struct {
	Base
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func (*StateUpdateEvent) eventKind() string { return KindStateUpdate }

// ConversationErrorEvent ends a run with an error (or says why the agent stopped): Code names
// the condition (MaxIterationsReached, LLMRateLimitError, ...), Detail explains it.
type ConversationErrorEvent struct {
	Base
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (*ConversationErrorEvent) eventKind() string { return KindConversationError }

// SandboxPausedEvent records that agentd paused the conversation's sandbox by itself (it was
// idle for longer than the configured timeout). It is agentd's own kind: OpenHands clients
// ignore kinds they do not know, and the model never sees it.
type SandboxPausedEvent struct {
	Base
	SandboxID string `json:"sandbox_id"`
	Reason    string `json:"reason"`
}

func (*SandboxPausedEvent) eventKind() string { return KindSandboxPaused }

// ServerErrorEvent tells a streaming client that the server could not handle what it sent
// (a malformed frame, a message it refused). It is sent on the stream only, never stored.
type ServerErrorEvent struct {
	Base
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (*ServerErrorEvent) eventKind() string { return KindServerError }

// PauseEvent records that the user paused the agent.
type PauseEvent struct{ Base }

func (*PauseEvent) eventKind() string { return KindPause }

// Condensation replaces the forgotten events, in what the model sees, by a summary placed at
// SummaryOffset of the remaining events.
type Condensation struct {
	Base
	ForgottenEventIDs []string `json:"forgotten_event_ids"`
	Summary           *string  `json:"summary"`
	SummaryOffset     *int     `json:"summary_offset"`
	LLMResponseID     string   `json:"llm_response_id,omitempty"`
}

func (*Condensation) eventKind() string { return KindCondensation }

// SummaryID is the id of the synthesized summary message a condensation inserts.
func (c *Condensation) SummaryID() string { return c.ID + "-summary" }

// NewStateUpdate builds a state update of key to value.
func NewStateUpdate(id string, at time.Time, key string, value any) (Event, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return Event{}, fmt.Errorf("encode state %s: %w", key, err)
	}
	return New(id, at, SourceEnvironment, &StateUpdateEvent{Key: key, Value: v})
}
