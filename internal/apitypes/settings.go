package apitypes

// Settings is a user's settings as sent by clients (POST /api/settings). Every field is
// optional: absent or null fields keep their stored value. Secret fields are write-only.
type Settings struct {
	Language                           *string    `json:"language" wire:"maxlen=256"`
	Agent                              *string    `json:"agent" wire:"maxlen=256"`
	MaxIterations                      *int       `json:"max_iterations" wire:"min=1"`
	SecurityAnalyzer                   *string    `json:"security_analyzer" wire:"maxlen=256"`
	ConfirmationMode                   *bool      `json:"confirmation_mode"`
	LLMModel                           *string    `json:"llm_model" wire:"maxlen=500"`
	LLMAPIKey                          *string    `json:"llm_api_key" wire:"secret,maxlen=65536"`
	LLMBaseURL                         *string    `json:"llm_base_url" wire:"maxlen=2000"`
	RemoteRuntimeResourceFactor        *int       `json:"remote_runtime_resource_factor"`
	EnableDefaultCondenser             *bool      `json:"enable_default_condenser"`
	EnableSoundNotifications           *bool      `json:"enable_sound_notifications"`
	EnableProactiveConversationStarter *bool      `json:"enable_proactive_conversation_starters"`
	UserConsentsToAnalytics            *bool      `json:"user_consents_to_analytics"`
	SandboxBaseContainerImage          *string    `json:"sandbox_base_container_image" wire:"maxlen=1000"`
	SandboxRuntimeContainerImage       *string    `json:"sandbox_runtime_container_image" wire:"maxlen=1000"`
	MCPConfig                          *MCPConfig `json:"mcp_config"`
	SearchAPIKey                       *string    `json:"search_api_key" wire:"secret,maxlen=65536"`
	SandboxAPIKey                      *string    `json:"sandbox_api_key" wire:"secret,maxlen=65536"`
	MaxBudgetPerTask                   *float64   `json:"max_budget_per_task" wire:"min=0"`
	CondenserMaxSize                   *int       `json:"condenser_max_size" wire:"min=20"`
	GitUserName                        *string    `json:"git_user_name" wire:"maxlen=256"`
	GitUserEmail                       *string    `json:"git_user_email" wire:"maxlen=320"`
}

// SettingsView is GET /api/settings: the stored settings with secrets left out and flags
// saying which secrets are set.
type SettingsView struct {
	Settings
	LLMAPIKeySet      bool               `json:"llm_api_key_set"`
	SearchAPIKeySet   bool               `json:"search_api_key_set"`
	ProviderTokensSet map[string]*string `json:"provider_tokens_set" doc:"Provider name to its host (null for the provider's default host)."`
}
