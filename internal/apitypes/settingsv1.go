package apitypes

// The current generation's settings (/api/v1/settings): the same stored settings as
// /api/settings, grouped as OpenHands groups them. The agent's settings (its LLM, its
// condenser) are in agent_settings, the conversation's limits in conversation_settings, and
// the product's preferences at the top level.

// SettingsV1 is GET /api/v1/settings. Secrets are null; the *_set flags say which are stored.
type SettingsV1 struct {
	SettingsV1Product
	AgentSettings        AgentSettingsV1        `json:"agent_settings"`
	ConversationSettings ConversationSettingsV1 `json:"conversation_settings"`
	SearchAPIKey         *string                `json:"search_api_key" doc:"Null (see search_api_key_set), but in GET /api/v1/users/me?expose_secrets=true."`
	SandboxAPIKey        *string                `json:"sandbox_api_key" doc:"Null, but in GET /api/v1/users/me?expose_secrets=true."`
	V1Enabled            bool                   `json:"v1_enabled"`
	LLMAPIKeySet         bool                   `json:"llm_api_key_set"`
	SearchAPIKeySet      bool                   `json:"search_api_key_set"`
	ProviderTokensSet    map[string]*string     `json:"provider_tokens_set" doc:"Provider name to its host (null for the provider's default host)."`
}

// SettingsV1Product are the top-level settings, the same in a read and in an update.
type SettingsV1Product struct {
	Language                           *string  `json:"language" wire:"maxlen=256"`
	RemoteRuntimeResourceFactor        *int     `json:"remote_runtime_resource_factor"`
	EnableSoundNotifications           *bool    `json:"enable_sound_notifications"`
	EnableProactiveConversationStarter *bool    `json:"enable_proactive_conversation_starters"`
	UserConsentsToAnalytics            *bool    `json:"user_consents_to_analytics"`
	SandboxBaseContainerImage          *string  `json:"sandbox_base_container_image" wire:"maxlen=1000"`
	SandboxRuntimeContainerImage       *string  `json:"sandbox_runtime_container_image" wire:"maxlen=1000"`
	MaxBudgetPerTask                   *float64 `json:"max_budget_per_task" wire:"min=0"`
	GitUserName                        *string  `json:"git_user_name" wire:"maxlen=256"`
	GitUserEmail                       *string  `json:"git_user_email" wire:"maxlen=320"`
}

// AgentSettingsV1 are the agent's settings as read.
type AgentSettingsV1 struct {
	SchemaVersion int               `json:"schema_version"`
	AgentKind     string            `json:"agent_kind" doc:"Always llm: agentd runs no ACP agents."`
	Agent         string            `json:"agent"`
	LLM           LLMSettingsV1     `json:"llm"`
	Condenser     CondenserSettings `json:"condenser"`
}

// LLMSettingsV1 is the LLM the user's conversations call, as read. A null model or base URL
// is one the user never set: the server's applies.
type LLMSettingsV1 struct {
	Model   *string `json:"model"`
	BaseURL *string `json:"base_url"`
	APIKey  *string `json:"api_key" doc:"Null (see llm_api_key_set), but in GET /api/v1/users/me?expose_secrets=true."`
}

// CondenserSettings say when the agent condenses its history. A null max_size is the
// server's default.
type CondenserSettings struct {
	Enabled bool `json:"enabled"`
	MaxSize *int `json:"max_size"`
}

// ConversationSettingsV1 are the conversations' limits, as read. A null value is the
// server's default.
type ConversationSettingsV1 struct {
	SchemaVersion    int     `json:"schema_version"`
	MaxIterations    *int    `json:"max_iterations"`
	ConfirmationMode bool    `json:"confirmation_mode"`
	SecurityAnalyzer *string `json:"security_analyzer"`
}

// SettingsV1Update is the body of POST /api/v1/settings: the settings to change, others
// keep their value. Top-level keys this version does not know are ignored, as OpenHands
// does; the keys of the two diffs are checked, so that a setting agentd cannot honour is
// refused rather than dropped. The whole objects agent_settings and conversation_settings
// are refused (422): send their *_diff.
type SettingsV1Update struct {
	SettingsV1Product
	AgentSettingsDiff        *AgentSettingsDiff        `json:"agent_settings_diff"`
	ConversationSettingsDiff *ConversationSettingsDiff `json:"conversation_settings_diff"`
	SearchAPIKey             *string                   `json:"search_api_key" wire:"secret,maxlen=65536" doc:"An empty string clears it."`
	SandboxAPIKey            *string                   `json:"sandbox_api_key" wire:"secret,maxlen=65536" doc:"An empty string clears it."`
}

// AgentSettingsDiff changes some of the agent's settings.
type AgentSettingsDiff struct {
	SchemaVersion *int           `json:"schema_version" doc:"Accepted and ignored."`
	AgentKind     *AgentKind     `json:"agent_kind"`
	Agent         *AgentName     `json:"agent"`
	LLM           *LLMDiff       `json:"llm"`
	Condenser     *CondenserDiff `json:"condenser"`
}

// WireStrict rejects unknown keys.
func (AgentSettingsDiff) WireStrict() {}

// LLMDiff changes some of the LLM settings.
type LLMDiff struct {
	Model   *string `json:"model" wire:"maxlen=500"`
	BaseURL *string `json:"base_url" wire:"maxlen=2000" doc:"An empty string clears it: the provider's public API (or the server's endpoint) is used."`
	APIKey  *string `json:"api_key" wire:"secret,maxlen=65536" doc:"An empty string clears it."`
}

// WireStrict rejects unknown keys.
func (LLMDiff) WireStrict() {}

// CondenserDiff changes when the agent condenses its history.
type CondenserDiff struct {
	Enabled *bool `json:"enabled"`
	MaxSize *int  `json:"max_size" wire:"min=20"`
}

// WireStrict rejects unknown keys.
func (CondenserDiff) WireStrict() {}

// ConversationSettingsDiff changes some of the conversations' limits.
type ConversationSettingsDiff struct {
	SchemaVersion    *int    `json:"schema_version" doc:"Accepted and ignored."`
	MaxIterations    *int    `json:"max_iterations" wire:"min=1"`
	ConfirmationMode *bool   `json:"confirmation_mode"`
	SecurityAnalyzer *string `json:"security_analyzer" wire:"maxlen=256"`
}

// WireStrict rejects unknown keys.
func (ConversationSettingsDiff) WireStrict() {}

// AgentKind is the kind of agent: agentd runs only LLM agents.
type AgentKind string

// EnumValues lists the accepted values.
func (AgentKind) EnumValues() []string { return []string{"llm"} }

// AgentName names an agent: agentd runs only CodeActAgent.
type AgentName string

// EnumValues lists the accepted values.
func (AgentName) EnumValues() []string { return []string{"CodeActAgent"} }

// SettingsSchema describes the settings a page edits, as OpenHands' settings pages read it:
// sections of fields, each field keyed by its path in the settings ("llm.model").
type SettingsSchema struct {
	ModelName string                  `json:"model_name"`
	Sections  []SettingsSectionSchema `json:"sections"`
}

// SettingsSectionSchema is one section of a settings page.
type SettingsSectionSchema struct {
	Key     string                `json:"key"`
	Label   string                `json:"label"`
	Fields  []SettingsFieldSchema `json:"fields"`
	Variant *string               `json:"variant"`
}

// SettingsFieldSchema is one setting.
type SettingsFieldSchema struct {
	Key          string           `json:"key"`
	Label        string           `json:"label"`
	Description  *string          `json:"description"`
	Section      string           `json:"section"`
	SectionLabel string           `json:"section_label"`
	ValueType    string           `json:"value_type" doc:"string, integer, number, boolean, array or object."`
	Default      any              `json:"default"`
	Prominence   string           `json:"prominence" doc:"critical, major or minor."`
	DependsOn    []string         `json:"depends_on"`
	Secret       bool             `json:"secret"`
	Choices      []SettingsChoice `json:"choices"`
	Variant      *string          `json:"variant"`
}

// SettingsChoice is one allowed value of a setting.
type SettingsChoice struct {
	Value any    `json:"value"`
	Label string `json:"label"`
}
