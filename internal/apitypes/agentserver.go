package apitypes

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/wire"
)

// Event is one event of a conversation's log in the OpenHands shape: an object with kind,
// id, timestamp (naive UTC, microseconds) and source, and the fields of its kind.
type Event json.RawMessage

// MarshalJSON writes the stored event as it is.
func (e Event) MarshalJSON() ([]byte, error) {
	if len(e) == 0 {
		return []byte("null"), nil
	}
	return e, nil
}

// UnmarshalJSON keeps the event as it was sent, for clients of the API.
func (e *Event) UnmarshalJSON(b []byte) error {
	*e = append((*e)[:0], b...)
	return nil
}

// WireSchema documents the envelope; the other fields depend on kind.
func (Event) WireSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"kind": map[string]any{"type": "string", "description": "The event's class: MessageEvent, ActionEvent, ObservationEvent, " +
				"AgentErrorEvent, SystemPromptEvent, ConversationStateUpdateEvent, ConversationErrorEvent, PauseEvent, Condensation."},
			"id":        map[string]any{"type": "string", "description": "A dashed UUID."},
			"timestamp": map[string]any{"type": "string", "description": "ISO 8601 in UTC without a zone, with microseconds."},
			"source":    map[string]any{"type": "string", "enum": []any{"agent", "user", "environment"}},
		},
		"required":             []any{"kind", "id", "timestamp", "source"},
		"additionalProperties": true,
	}
}

// EventPage is a page of events.
type EventPage struct {
	Items      []Event `json:"items"`
	NextPageID *string `json:"next_page_id"`
}

// ConversationEventSearchQuery filters GET .../api/conversations/{id}/events/search.
type ConversationEventSearchQuery struct {
	PageID       string          `query:"page_id"`
	Limit        int             `query:"limit" wire:"min=1,max=100,default=100"`
	Kind         string          `query:"kind" doc:"Event class, short (MessageEvent) or fully qualified (openhands.sdk.event.llm_convertible.message.MessageEvent)."`
	Source       string          `query:"source" doc:"agent, user or environment."`
	Body         string          `query:"body" doc:"Text that MessageEvents must contain (in their text, extended content or reasoning), ignoring case; other kinds never match."`
	SortOrder    *EventSortOrder `query:"sort_order" doc:"Default TIMESTAMP (the log's order)."`
	TimestampGTE *time.Time      `query:"timestamp__gte"`
	TimestampLT  *time.Time      `query:"timestamp__lt"`
}

// ConversationEventCountQuery filters GET .../api/conversations/{id}/events/count.
type ConversationEventCountQuery struct {
	Kind         string     `query:"kind"`
	Source       string     `query:"source"`
	Body         string     `query:"body" doc:"Text that MessageEvents must contain, ignoring case (see the search)."`
	TimestampGTE *time.Time `query:"timestamp__gte"`
	TimestampLT  *time.Time `query:"timestamp__lt"`
}

// EventSearchQuery filters GET /api/v1/events/search.
type EventSearchQuery struct {
	ConversationIDEq *string         `query:"conversation_id__eq"`
	KindEq           string          `query:"kind__eq" doc:"Event class, short or fully qualified."`
	TimestampGTE     *time.Time      `query:"timestamp__gte"`
	TimestampLT      *time.Time      `query:"timestamp__lt"`
	SortOrder        *EventSortOrder `query:"sort_order" doc:"Default TIMESTAMP (the log's order)."`
	PageID           string          `query:"page_id"`
	Limit            int             `query:"limit" wire:"min=1,max=100,default=100"`
}

// EventCountQuery filters GET /api/v1/events/count.
type EventCountQuery struct {
	ConversationIDEq *string         `query:"conversation_id__eq"`
	KindEq           string          `query:"kind__eq"`
	TimestampGTE     *time.Time      `query:"timestamp__gte"`
	TimestampLT      *time.Time      `query:"timestamp__lt"`
	SortOrder        *EventSortOrder `query:"sort_order" doc:"Accepted and ignored, as in OpenHands."`
}

// ConversationEventsSearchQuery filters GET /api/v1/conversation/{conversation_id}/events/search,
// the current generation's path of the events search: the conversation is in the path.
type ConversationEventsSearchQuery struct {
	KindEq       string          `query:"kind__eq" doc:"Event class, short or fully qualified."`
	TimestampGTE *time.Time      `query:"timestamp__gte"`
	TimestampLT  *time.Time      `query:"timestamp__lt"`
	SortOrder    *EventSortOrder `query:"sort_order" doc:"Default TIMESTAMP (the log's order)."`
	PageID       string          `query:"page_id"`
	Limit        int             `query:"limit" wire:"min=1,max=100,default=100"`
}

// ConversationEventsCountQuery filters GET /api/v1/conversation/{conversation_id}/events/count.
type ConversationEventsCountQuery struct {
	KindEq       string     `query:"kind__eq"`
	TimestampGTE *time.Time `query:"timestamp__gte"`
	TimestampLT  *time.Time `query:"timestamp__lt"`
}

// Kinded is a polymorphic object given by its kind alone.
type Kinded struct {
	Kind string `json:"kind"`
}

// AgentLLM is the model a conversation's agent uses. The key is never shown.
type AgentLLM struct {
	Model   string `json:"model"`
	UsageID string `json:"usage_id"`
}

// AgentTool names one tool of the agent.
type AgentTool struct {
	Name string `json:"name"`
}

// AgentSpec describes a conversation's agent.
type AgentSpec struct {
	Kind  string      `json:"kind"`
	LLM   AgentLLM    `json:"llm"`
	Tools []AgentTool `json:"tools"`
}

// AgentWorkspace is where the agent works.
type AgentWorkspace struct {
	Kind       string `json:"kind"`
	WorkingDir string `json:"working_dir"`
}

// ConversationStats is the usage per LLM of a conversation.
type ConversationStats struct {
	UsageToMetrics map[string]MetricsSnapshot `json:"usage_to_metrics"`
}

// AgentConversationInfo is a conversation as the conversation API (OpenHands' agent server
// API, served under conversation_url) shows it.
type AgentConversationInfo struct {
	ID                   string             `json:"id" doc:"A dashed UUID (ids that are not UUIDs are shown as they are)."`
	Title                *string            `json:"title"`
	ExecutionStatus      ExecutionStatus    `json:"execution_status"`
	Agent                AgentSpec          `json:"agent"`
	Workspace            AgentWorkspace     `json:"workspace"`
	MaxIterations        int                `json:"max_iterations"`
	StuckDetection       bool               `json:"stuck_detection"`
	ConfirmationPolicy   ConfirmationPolicy `json:"confirmation_policy"`
	Stats                ConversationStats  `json:"stats"`
	Metrics              *MetricsSnapshot   `json:"metrics"`
	Tags                 map[string]string  `json:"tags"`
	ParentConversationID *string            `json:"parent_conversation_id"`
	SubConversationIDs   []string           `json:"sub_conversation_ids"`
	CreatedAt            time.Time          `json:"created_at"`
	UpdatedAt            time.Time          `json:"updated_at"`
}

// StreamState is the value of the full_state update that a live stream opens with: the
// conversation as the conversation API shows it, with the status fields that the stream's
// own state updates carry (sandbox_status, conversation_status, start_task).
type StreamState struct {
	AgentConversationInfo
	SandboxID          *string               `json:"sandbox_id"`
	SandboxStatus      string                `json:"sandbox_status" doc:"STARTING, RUNNING, PAUSED, ERROR or MISSING (no sandbox, or it is gone)."`
	ConversationStatus string                `json:"conversation_status" doc:"STARTING, RUNNING, STOPPED or ERROR."`
	StartTask          *event.StartTaskState `json:"start_task" doc:"The conversation's latest start task; null for one created without (V0)."`
}

// StreamClose is the data of the "close" event that ends an SSE event stream, saying why.
type StreamClose struct {
	Reason string `json:"reason" doc:"lagged: the client fell behind (reconnect after the last event received); deleted: the conversation was deleted; shutdown: the server is stopping (reconnect); error: a server error."`
	Detail string `json:"detail"`
}

// AgentFinalResponse is the agent's last answer: the message of its last finish call or the
// text of its last message, whichever came later; empty when there is none.
type AgentFinalResponse struct {
	Response string `json:"response"`
}

// ResendMode says which past events an event socket replays before the live ones.
type ResendMode string

// EnumValues lists the accepted values.
func (ResendMode) EnumValues() []string { return []string{"all", "since"} }

// EventSocketQuery is the query of the event socket (/sockets/events/{conversation_id}).
type EventSocketQuery struct {
	SessionAPIKey  string      `query:"session_api_key" wire:"secret" doc:"Deprecated: send the key in the first frame instead."`
	ResendMode     *ResendMode `query:"resend_mode" doc:"all: replay the whole log first; since: the events from after_timestamp on; absent: live events only."`
	AfterTimestamp *time.Time  `query:"after_timestamp" doc:"With resend_mode=since: replay the events with timestamp >= this."`
	ResendAll      bool        `query:"resend_all" doc:"Deprecated: resend_mode=all."`
	AfterEventID   *string     `query:"after_event_id" wire:"minlen=1,maxlen=200" doc:"agentd's: replay the events after this one (the id of the last event the client received), then the live ones: each event once, also across a restart of the server. Not with resend_mode or resend_all."`
}

// ValidateWire refuses a replay asked for twice.
func (q *EventSocketQuery) ValidateWire(c *wire.Checker) {
	if q.AfterEventID != nil && (q.ResendMode != nil || q.ResendAll) {
		c.ValueError("after_event_id already says what to replay: leave out resend_mode and resend_all", "after_event_id")
	}
}

// EventStreamQuery is the query of a conversation's event stream
// (GET /api/v1/app-conversations/{conversation_id}/events/stream).
type EventStreamQuery struct {
	AfterEventID *string `query:"after_event_id" wire:"minlen=1,maxlen=200" doc:"Start after this event: the id of the last event the client received. A Last-Event-ID header takes precedence (an EventSource sends it when it reconnects). Absent: the whole log."`
}

// SocketAuth is the first frame of an event socket opened without a key.
type SocketAuth struct {
	Type          string `json:"type"`
	SessionAPIKey string `json:"session_api_key"`
}

// SocketMessage is a message a client sends on an event socket (an SDK Message): it is
// added to the conversation and the agent runs to answer it.
type SocketMessage struct {
	Role    MessageRole `json:"role" wire:"required"`
	Content []Content   `json:"content"`
}

// VSCodeURLQuery is the query of an agent server's GET /api/vscode/url; agentd runs no
// editor, so neither changes the answer.
type VSCodeURLQuery struct {
	BaseURL      string `query:"base_url" doc:"Accepted and ignored."`
	WorkspaceDir string `query:"workspace_dir" doc:"Accepted and ignored."`
}

// VSCodeURL is an agent server's answer to GET /api/vscode/url: null when no editor runs.
type VSCodeURL struct {
	URL *string `json:"url" doc:"Always null: agentd runs no VS Code server in its sandboxes."`
}

// VSCodeStatus is an agent server's answer to GET /api/vscode/status.
type VSCodeStatus struct {
	Running bool   `json:"running"`
	Enabled bool   `json:"enabled"`
	Message string `json:"message"`
}

// AgentServerSettings is an agent server's GET /api/settings: its owner's settings, as
// OpenHands' SDK reads them to build its LLM (RemoteWorkspace.get_llm).
type AgentServerSettings struct {
	AgentSettings        AgentSettingsV1        `json:"agent_settings" doc:"As in GET /api/v1/settings; llm.api_key is null unless exposed (X-Expose-Secrets)."`
	ConversationSettings ConversationSettingsV1 `json:"conversation_settings"`
	LLMAPIKeyIsSet       bool                   `json:"llm_api_key_is_set"`
	ActiveProfile        *string                `json:"active_profile" doc:"Always null, so that clients read agent_settings.llm: agentd's agent servers serve no /api/profiles."`
	AppPreferences       AppPreferences         `json:"app_preferences"`
}

// AppPreferences are the user's preferences an agent server keeps beside its settings.
type AppPreferences struct {
	Language                 *string  `json:"language"`
	UserConsentsToAnalytics  *bool    `json:"user_consents_to_analytics"`
	EnableSoundNotifications *bool    `json:"enable_sound_notifications"`
	GitUserName              *string  `json:"git_user_name"`
	GitUserEmail             *string  `json:"git_user_email"`
	DisabledSkills           []string `json:"disabled_skills" doc:"Always empty: agentd disables no skill by name."`
}

// AgentSkillsRequest is the body of an agent server's POST /api/skills, which loads the
// skills an agent in the sandbox would be given.
type AgentSkillsRequest struct {
	LoadPublic    bool            `json:"load_public" wire:"default=true" doc:"Accepted; agentd loads no public skills (it fetches nothing from the internet for skills)."`
	LoadUser      bool            `json:"load_user" wire:"default=true" doc:"The sandbox owner's own skills (POST /api/v1/skills)."`
	LoadProject   bool            `json:"load_project" wire:"default=true" doc:"The skill files of project_dir in the workspace."`
	LoadOrg       bool            `json:"load_org" wire:"default=true" doc:"Accepted; agentd loads no organisation skills."`
	ProjectDir    *string         `json:"project_dir" wire:"nullable" doc:"Absolute inside the workspace, or relative to it; null: the workspace."`
	OrgConfig     json.RawMessage `json:"org_config" doc:"Accepted and ignored (it may hold a credential: it is never stored or logged)."`
	SandboxConfig json.RawMessage `json:"sandbox_config" doc:"Accepted and ignored."`
}

// AgentSkill is one skill an agent server's POST /api/skills loaded.
type AgentSkill struct {
	Name                string         `json:"name"`
	Type                AgentSkillType `json:"type"`
	Content             string         `json:"content"`
	Triggers            []string       `json:"triggers"`
	Source              *string        `json:"source" doc:"Where it came from: its path in the workspace, or user."`
	Description         *string        `json:"description"`
	IsAgentSkillsFormat bool           `json:"is_agentskills_format" doc:"Always false: agentd reads SKILL.md bundles as knowledge or repo skills."`
}

// AgentSkillType is how an agent is given a skill: repo (always), knowledge (on its triggers).
type AgentSkillType string

// EnumValues lists the values agentd answers.
func (AgentSkillType) EnumValues() []string { return []string{"repo", "knowledge"} }

// AgentSkills answers POST /api/skills: the skills, merged, and how many each source gave.
type AgentSkills struct {
	Skills  []AgentSkill   `json:"skills"`
	Sources map[string]int `json:"sources" doc:"sandbox, public, user, org and project, each with how many skills it gave before the merge."`
}
