package apitypes

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/wire"
)

// ExposedURL is an address a sandbox offers.
type ExposedURL struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Port is the URL's port (80 or 443 when it names none); OpenHands' model requires it.
	Port int `json:"port"`
}

// SandboxInfo describes a sandbox.
type SandboxInfo struct {
	ID              string        `json:"id"`
	CreatedByUserID *string       `json:"created_by_user_id"`
	SandboxSpecID   string        `json:"sandbox_spec_id"`
	Status          SandboxStatus `json:"status"`
	SessionAPIKey   *string       `json:"session_api_key" doc:"Key for the sandbox's runtime; set while RUNNING."`
	ExposedURLs     []ExposedURL  `json:"exposed_urls" doc:"Null unless RUNNING."`
	CreatedAt       time.Time     `json:"created_at"`
	Backend         string        `json:"backend" doc:"Sandbox backend: process, bwrap, docker or kubernetes."`
	Detail          *string       `json:"detail" doc:"Why the sandbox is in ERROR or MISSING."`
}

// SandboxPage is a page of sandboxes.
type SandboxPage struct {
	Items      []SandboxInfo `json:"items"`
	NextPageID *string       `json:"next_page_id"`
}

// SandboxStartQuery is the query of POST /api/v1/sandboxes.
type SandboxStartQuery struct {
	SandboxSpecID string `query:"sandbox_spec_id"`
}

// SandboxLimits are a spec's resource bounds; absent means unlimited.
type SandboxLimits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	PIDs        int64   `json:"pids,omitempty"`
	DiskBytes   int64   `json:"disk_bytes,omitempty"`
	TmpBytes    int64   `json:"tmp_bytes,omitempty"`
}

// SandboxSpecInfo is a template sandboxes start from.
type SandboxSpecInfo struct {
	ID          string            `json:"id"`
	Command     []string          `json:"command"`
	CreatedAt   time.Time         `json:"created_at"`
	InitialEnv  map[string]string `json:"initial_env"`
	WorkingDir  string            `json:"working_dir"`
	Description string            `json:"description,omitempty"`
	Image       string            `json:"image,omitempty"`
	Rootfs      string            `json:"rootfs,omitempty"`
	Network     string            `json:"network" doc:"egress (the internet, nothing of the host), none (loopback only) or host."`
	Limits      SandboxLimits     `json:"limits"`
	Warnings    []string          `json:"warnings,omitempty" doc:"What the active backend cannot honour for this spec."`
}

// SandboxSpecInfoPage is a page of specs.
type SandboxSpecInfoPage struct {
	Items      []SandboxSpecInfo `json:"items"`
	NextPageID *string           `json:"next_page_id"`
}

// PageQuery is the paging part of every V1 search.
type PageQuery struct {
	PageID string `query:"page_id"`
	Limit  int    `query:"limit" wire:"min=1,max=100,default=100"`
}

// IDsQuery is a batch get by repeated id.
type IDsQuery struct {
	ID []string `query:"id" wire:"maxlen=100"`
}

// ConversationIDsQuery is a batch get of conversations or start tasks by repeated ids.
type ConversationIDsQuery struct {
	IDs []string `query:"ids" wire:"maxlen=100"`
}

// TextContent is a text part of a message.
type TextContent struct {
	Type        string `json:"type"`
	Text        string `json:"text" wire:"required"`
	CachePrompt *bool  `json:"cache_prompt"`
}

// WireStrict rejects unknown keys.
func (TextContent) WireStrict() {}

// ImageContent is an image part of a message.
type ImageContent struct {
	Type      string   `json:"type"`
	ImageURLs []string `json:"image_urls" wire:"required"`
}

// Content is one part of a message: text or images, told apart by "type".
type Content struct {
	Text  *TextContent
	Image *ImageContent
}

// DecodeWire picks the part type from the "type" key.
func (c *Content) DecodeWire(v any, d *wire.Decoder) {
	obj, ok := v.(map[string]any)
	if !ok {
		d.Problem("model_attributes_type", "Input should be a valid dictionary or object to extract fields from")
		return
	}
	switch obj["type"] {
	case "text", nil:
		c.Text = &TextContent{}
		d.Decode(v, c.Text)
		c.Text.Type = "text"
	case "image":
		c.Image = &ImageContent{}
		d.Decode(v, c.Image)
	default:
		d.Problem("union_tag_invalid", "Input tag does not match any of the expected tags: 'text', 'image'", "type")
	}
}

// MarshalJSON writes the part that is set.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Image != nil {
		return json.Marshal(c.Image)
	}
	if c.Text != nil {
		return json.Marshal(c.Text)
	}
	return []byte("null"), nil
}

// WireSchema documents the union.
func (Content) WireSchema() map[string]any {
	return map[string]any{"oneOf": []any{
		map[string]any{"type": "object", "properties": map[string]any{
			"type": map[string]any{"const": "text"}, "text": map[string]any{"type": "string"},
			"cache_prompt": map[string]any{"type": []any{"boolean", "null"}}}, "required": []any{"text"}},
		map[string]any{"type": "object", "properties": map[string]any{
			"type": map[string]any{"const": "image"}, "image_urls": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
			"required": []any{"type", "image_urls"}},
	}}
}

// SendMessageRequest is a message sent into a conversation.
type SendMessageRequest struct {
	Role    *MessageRole `json:"role" doc:"Default user."`
	Content []Content    `json:"content"`
	Run     bool         `json:"run" doc:"Start the agent after adding the message."`
}

// ProcessorSpec is an event callback processor, told apart by kind.
type ProcessorSpec struct {
	Kind string `json:"kind" wire:"required"`
}

// AppConversationStartRequest is the body of POST /api/v1/app-conversations.
type AppConversationStartRequest struct {
	SandboxID            *string              `json:"sandbox_id" doc:"Use this sandbox instead of starting one; it is resumed if paused."`
	InitialMessage       *SendMessageRequest  `json:"initial_message"`
	Processors           []ProcessorSpec      `json:"processors"`
	LLMModel             *string              `json:"llm_model" wire:"maxlen=500"`
	SelectedRepository   *string              `json:"selected_repository" wire:"maxlen=300"`
	SelectedBranch       *string              `json:"selected_branch" wire:"maxlen=300"`
	GitProvider          *ProviderType        `json:"git_provider"`
	Title                *string              `json:"title" wire:"maxlen=200"`
	Trigger              *ConversationTrigger `json:"trigger"`
	PRNumber             []int                `json:"pr_number" wire:"maxlen=100"`
	ParentConversationID *string              `json:"parent_conversation_id"`
	AgentType            *AgentType           `json:"agent_type"`
	// ConversationInstructions are added to the agent's system prompt, as the V0 field.
	ConversationInstructions *string               `json:"conversation_instructions" doc:"System-level instructions for the agent (agentd addition: the V0 field, on V1)."`
	Secrets                  *StartSecrets         `json:"secrets" wire:"secret" doc:"The secrets the agent's commands get as environment variables: an object of name to value, or the names of the caller's stored secrets. Values are never shown."`
	SuggestedTask            *SuggestedTaskRequest `json:"suggested_task" doc:"Work on an issue or pull request: agentd writes the first message (its text replaces initial_message's) and the trigger defaults to suggested_task."`
	MCPConfig                *MCPConfig            `json:"mcp_config" doc:"MCP tool servers for this conversation (agentd addition: the V0 field, on V1), beside the user's stored ones; a server with a stored one's name (stdio) or URL replaces it."`
	ConfirmationPolicy       *ConfirmationPolicy   `json:"confirmation_policy" doc:"Which of the agent's actions wait for the user's confirmation (agentd addition: the agent server's start field). Absent: the parent conversation's, else the one the settings choose (confirmation_mode: AlwaysConfirm, or ConfirmRisky with security_analyzer llm)."`
	ConversationID           *string               `json:"conversation_id" doc:"The new conversation's id, a UUID; one that exists is a 409."`
	SystemMessageSuffix      *string               `json:"system_message_suffix" doc:"Text appended to the agent's system prompt."`
	Public                   *bool                 `json:"public"`
	Tags                     Tags                  `json:"tags" wire:"maxlen=50" doc:"The client's metadata of the conversation, stored and returned: at most 50 tags, keys of at most 64 characters and values of at most 256."`
	Plugins                  []json.RawMessage     `json:"plugins" doc:"Not supported: only an empty list (or null) is accepted."`
	DependencyRepos          []string              `json:"dependency_repos" doc:"Not supported: only an empty list is accepted."`
}

// WireStrict makes unknown fields a 422 naming them: a client that sends what agentd does
// not know learns it, instead of getting a conversation without it.
func (AppConversationStartRequest) WireStrict() {}

// ValidateWire refuses what agentd accepts only empty.
func (r *AppConversationStartRequest) ValidateWire(c *wire.Checker) {
	if len(r.Plugins) > 0 {
		c.ValueError("plugins are not supported by this server", "plugins")
	}
	if len(r.DependencyRepos) > 0 {
		c.ValueError("dependency repositories are not supported by this server", "dependency_repos")
	}
}

// Tags are a client's metadata of a conversation. They are stored in its row and shown in
// every listing of it, so their keys and values are bounded (the field's maxlen bounds their
// number); 256 characters is OpenHands' bound of a value.
type Tags map[string]string

// ValidateWire bounds the keys and values, in the keys' order.
func (t Tags) ValidateWire(c *wire.Checker) {
	for _, k := range slices.Sorted(maps.Keys(t)) {
		c.MaxLen(k, 64, k, "[key]")
		c.MaxLen(t[k], 256, k)
	}
}

// AppConversationUpdateRequest is the body of PATCH /api/v1/app-conversations/{id}: absent or
// null fields stay as they are.
type AppConversationUpdateRequest struct {
	Title              *string       `json:"title" wire:"minlen=1,maxlen=200"`
	Public             *bool         `json:"public"`
	SelectedRepository *string       `json:"selected_repository" wire:"minlen=1,maxlen=300"`
	SelectedBranch     *string       `json:"selected_branch" wire:"minlen=1,maxlen=300"`
	GitProvider        *ProviderType `json:"git_provider"`
}

// WireStrict rejects unknown fields.
func (AppConversationUpdateRequest) WireStrict() {}

// AppSendMessageRequest is the body of POST /api/v1/app-conversations/{id}/send-message.
type AppSendMessageRequest struct {
	Role    *MessageRole `json:"role" doc:"Only user."`
	Content []Content    `json:"content" wire:"required,minlen=1"`
	Run     *bool        `json:"run" doc:"Default true: the agent answers the message."`
}

// AppSendMessageResponse answers a message sent to a conversation.
type AppSendMessageResponse struct {
	Success       bool          `json:"success"`
	SandboxStatus SandboxStatus `json:"sandbox_status"`
	Message       *string       `json:"message"`
}

// PendingMessageRequest is the body of POST /api/v1/conversations/{id}/pending-messages.
type PendingMessageRequest struct {
	Role    *MessageRole `json:"role" doc:"Only user."`
	Content []Content    `json:"content" wire:"required,minlen=1"`
}

// PendingMessageResponse answers a queued message.
type PendingMessageResponse struct {
	ID       string `json:"id"`
	Queued   bool   `json:"queued" doc:"false when the conversation was ready and the message was sent at once."`
	Position int    `json:"position" doc:"Place in the queue, 1 for the first; 0 when sent at once."`
}

// MetricsSnapshot is the token usage and cost of a conversation, as the agent loop records
// it; TokenUsage is its token counts.
type (
	MetricsSnapshot = llm.MetricsSnapshot
	TokenUsage      = llm.TokenUsage
)

// AppConversation is a V1 conversation with its live status.
type AppConversation struct {
	ID                   string               `json:"id"`
	CreatedByUserID      *string              `json:"created_by_user_id"`
	SandboxID            string               `json:"sandbox_id"`
	SelectedRepository   *string              `json:"selected_repository"`
	SelectedBranch       *string              `json:"selected_branch"`
	GitProvider          *ProviderType        `json:"git_provider"`
	Title                *string              `json:"title"`
	Trigger              *ConversationTrigger `json:"trigger"`
	PRNumber             []int                `json:"pr_number"`
	LLMModel             *string              `json:"llm_model"`
	Metrics              *MetricsSnapshot     `json:"metrics"`
	ParentConversationID *string              `json:"parent_conversation_id"`
	SubConversationIDs   []string             `json:"sub_conversation_ids"`
	CreatedAt            time.Time            `json:"created_at"`
	UpdatedAt            time.Time            `json:"updated_at"`
	SandboxStatus        SandboxStatus        `json:"sandbox_status"`
	ExecutionStatus      *ExecutionStatus     `json:"execution_status"`
	ConversationURL      *string              `json:"conversation_url"`
	SessionAPIKey        *string              `json:"session_api_key"`
	AgentKind            string               `json:"agent_kind" doc:"Always openhands: agentd runs its own agent."`
	Public               *bool                `json:"public" doc:"Whether the conversation is shared, as a client last set it; agentd stores it and shares nothing."`
	Tags                 map[string]string    `json:"tags"`
	ConversationStatus   ConversationStatus   `json:"conversation_status" doc:"agentd addition: STARTING, RUNNING, STOPPED or ERROR."`
	ConversationVersion  string               `json:"conversation_version" doc:"V0 or V1: the API the conversation was created through."`
	WaitingForNode       *string              `json:"waiting_for_node" doc:"agentd addition: the node hosting the conversation's sandbox while no replica of agentd runs there, so that nothing can run the conversation until one starts there again; null otherwise."`
}

// AppConversationPage is a page of conversations.
type AppConversationPage struct {
	Items      []AppConversation `json:"items"`
	NextPageID *string           `json:"next_page_id"`
}

// AppConversationSearchQuery filters GET /api/v1/app-conversations/search.
type AppConversationSearchQuery struct {
	TitleContains           string     `query:"title__contains"`
	CreatedAtGTE            *time.Time `query:"created_at__gte"`
	CreatedAtLT             *time.Time `query:"created_at__lt"`
	UpdatedAtGTE            *time.Time `query:"updated_at__gte"`
	UpdatedAtLT             *time.Time `query:"updated_at__lt"`
	IncludeSubConversations bool       `query:"include_sub_conversations"`
	SandboxIDEq             string     `query:"sandbox_id__eq" doc:"Only the conversations that use this sandbox."`
	PageID                  string     `query:"page_id"`
	Limit                   int        `query:"limit" wire:"min=1,max=100,default=100"`
}

// AppConversationCountQuery filters GET /api/v1/app-conversations/count. It counts what the
// search with the same filters lists (OpenHands counts sub-conversations regardless).
type AppConversationCountQuery struct {
	TitleContains           string     `query:"title__contains"`
	CreatedAtGTE            *time.Time `query:"created_at__gte"`
	CreatedAtLT             *time.Time `query:"created_at__lt"`
	UpdatedAtGTE            *time.Time `query:"updated_at__gte"`
	UpdatedAtLT             *time.Time `query:"updated_at__lt"`
	IncludeSubConversations bool       `query:"include_sub_conversations"`
	SandboxIDEq             string     `query:"sandbox_id__eq" doc:"Only the conversations that use this sandbox."`
}

// AppConversationStartTask is the background start of a conversation.
type AppConversationStartTask struct {
	ID                string           `json:"id"`
	CreatedByUserID   *string          `json:"created_by_user_id"`
	Status            StartTaskStatus  `json:"status"`
	Detail            *string          `json:"detail"`
	AppConversationID *string          `json:"app_conversation_id" doc:"Set once READY."`
	SandboxID         *string          `json:"sandbox_id"`
	AgentServerURL    *string          `json:"agent_server_url"`
	Request           StartRequestEcho `json:"request"`
	CreatedAt         time.Time        `json:"created_at"`
	UpdatedAt         time.Time        `json:"updated_at"`
}

// StartRequestEcho is a start request as agentd stored it when the task began: an
// AppConversationStartRequest marshalled with the value of every field tagged secret masked
// (EchoStartRequest). It is written into answers as it is, so a listing of tasks does not
// decode and encode each request again.
type StartRequestEcho json.RawMessage

// EchoStartRequest is req as a start task keeps and shows it: every value of a field tagged
// secret (its MCP servers' API keys and environment values, its inline secrets) is
// wire.Mask. The values themselves are kept only in the conversation's sealed request.
func EchoStartRequest(req AppConversationStartRequest) (json.RawMessage, error) {
	return json.Marshal(wire.MaskSecrets(req))
}

// emptyStartRequest is the echo of a task stored without a request.
var emptyStartRequest, _ = json.Marshal(AppConversationStartRequest{PRNumber: []int{}})

// legacyMCP marks a stored request that may hold secrets unmasked: before EchoStartRequest,
// tasks kept the request as received but for its inline secrets, and only an MCP
// configuration could hold others.
var legacyMCP = []byte(`"mcp_config":{`)

// MarshalJSON writes the stored request; one with an MCP configuration is decoded and
// masked first, in case it was stored before its secrets were masked.
func (e StartRequestEcho) MarshalJSON() ([]byte, error) {
	if len(e) == 0 {
		return emptyStartRequest, nil
	}
	if bytes.Contains(e, legacyMCP) {
		var req AppConversationStartRequest
		if err := json.Unmarshal(e, &req); err != nil {
			// Nothing of a request that cannot be read is shown: it may hold a secret.
			return emptyStartRequest, nil
		}
		return EchoStartRequest(req)
	}
	return e, nil
}

// UnmarshalJSON keeps the request as it was sent, for clients of the API.
func (e *StartRequestEcho) UnmarshalJSON(b []byte) error {
	*e = append((*e)[:0], b...)
	return nil
}

// WireSchema is AppConversationStartRequest's.
func (StartRequestEcho) WireSchema() map[string]any { return wire.Ref(AppConversationStartRequest{}) }

// AppConversationStartTaskPage is a page of start tasks.
type AppConversationStartTaskPage struct {
	Items      []AppConversationStartTask `json:"items"`
	NextPageID *string                    `json:"next_page_id"`
}

// StartTaskSearchQuery filters GET /api/v1/app-conversations/start-tasks/search.
type StartTaskSearchQuery struct {
	ConversationIDEq *string             `query:"conversation_id__eq"`
	CreatedAtGTE     *time.Time          `query:"created_at__gte"`
	SortOrder        *StartTaskSortOrder `query:"sort_order" doc:"Default CREATED_AT_DESC."`
	PageID           string              `query:"page_id"`
	Limit            int                 `query:"limit" wire:"min=1,max=100,default=100"`
}

// StartTaskCountQuery filters GET /api/v1/app-conversations/start-tasks/count.
type StartTaskCountQuery struct {
	ConversationIDEq *string    `query:"conversation_id__eq"`
	CreatedAtGTE     *time.Time `query:"created_at__gte"`
}

// UnmarshalJSON reads a stored part back (requests echoed by start tasks).
func (c *Content) UnmarshalJSON(b []byte) error {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Type == "image" {
		c.Image = new(ImageContent)
		return json.Unmarshal(b, c.Image)
	}
	c.Text = new(TextContent)
	return json.Unmarshal(b, c.Text)
}

// ConversationSkillType says when a conversation's agent is given a skill, in OpenHands'
// words: repo (always), knowledge (on a trigger word, task skills included); agentskills
// (loaded by the agent on demand) agentd has none of.
type ConversationSkillType string

// EnumValues lists the values.
func (ConversationSkillType) EnumValues() []string {
	return []string{"repo", "knowledge", "agentskills"}
}

// ConversationSkill is one skill a conversation's agent is given (OpenHands' SkillResponse).
type ConversationSkill struct {
	Name     string                `json:"name"`
	Type     ConversationSkillType `json:"type"`
	Content  string                `json:"content"`
	Triggers []string              `json:"triggers"`
}

// ConversationSkills answers GET /api/v1/app-conversations/{id}/skills.
type ConversationSkills struct {
	Skills []ConversationSkill `json:"skills"`
}

// HookDefinition is one command a lifecycle hook runs (OpenHands' HookDefinitionResponse).
type HookDefinition struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
	Async   bool   `json:"async"`
}

// HookMatcher says which tools a hook applies to, and its commands.
type HookMatcher struct {
	Matcher string           `json:"matcher"`
	Hooks   []HookDefinition `json:"hooks"`
}

// HookEvent is the hooks of one lifecycle event (pre_tool_use, stop, …).
type HookEvent struct {
	EventType string        `json:"event_type"`
	Matchers  []HookMatcher `json:"matchers"`
}

// ConversationHooks answers GET /api/v1/app-conversations/{id}/hooks.
type ConversationHooks struct {
	Hooks []HookEvent `json:"hooks" doc:"Always empty: agentd runs no lifecycle hooks (it does not read .openhands/hooks.json)."`
}
