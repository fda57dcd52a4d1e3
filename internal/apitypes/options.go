package apitypes

import "time"

// OptionsConfig answers GET /api/options/config, the first call of OpenHands' web app: it
// reads APP_MODE to decide how to behave (oss: no login) and the feature flags to show or
// hide parts of its pages.
type OptionsConfig struct {
	AppMode             string             `json:"APP_MODE" doc:"Always oss: the web app sends no login."`
	GitHubClientID      string             `json:"GITHUB_CLIENT_ID" doc:"Empty: agentd has no GitHub OAuth app; tokens are stored with POST /api/add-git-providers."`
	PostHogClientKey    string             `json:"POSTHOG_CLIENT_KEY" doc:"Empty: the web app sends no analytics."`
	FeatureFlags        OptionsFeatureFlag `json:"FEATURE_FLAGS"`
	ProvidersConfigured []ProviderType     `json:"PROVIDERS_CONFIGURED" doc:"The providers users log in with; none, as agentd authenticates with API keys."`
}

// OptionsFeatureFlag are the web app's feature flags: agentd offers none of these features.
type OptionsFeatureFlag struct {
	EnableBilling   bool `json:"ENABLE_BILLING"`
	HideLLMSettings bool `json:"HIDE_LLM_SETTINGS"`
	EnableJira      bool `json:"ENABLE_JIRA"`
	EnableJiraDC    bool `json:"ENABLE_JIRA_DC"`
	EnableLinear    bool `json:"ENABLE_LINEAR"`
}

// WebClientConfig answers GET /api/v1/web-client/config, the first call of the current web
// app: the same facts as OptionsConfig, in the current generation's names.
type WebClientConfig struct {
	AppMode              string                `json:"app_mode" doc:"Always oss: the web app sends no login."`
	PostHogClientKey     *string               `json:"posthog_client_key" doc:"Null: the web app sends no analytics."`
	FeatureFlags         WebClientFeatureFlags `json:"feature_flags"`
	ProvidersConfigured  []ProviderType        `json:"providers_configured" doc:"The providers users log in with; none, as agentd authenticates with API keys."`
	MaintenanceStartTime *time.Time            `json:"maintenance_start_time"`
	AuthURL              *string               `json:"auth_url"`
	RecaptchaSiteKey     *string               `json:"recaptcha_site_key"`
	FaultyModels         []string              `json:"faulty_models"`
	ErrorMessage         *string               `json:"error_message"`
	UpdatedAt            time.Time             `json:"updated_at" doc:"When error_message and faulty_models last changed."`
	GitHubAppSlug        *string               `json:"github_app_slug"`
}

// WebClientFeatureFlags are the current web app's feature flags: agentd offers none of
// these features.
type WebClientFeatureFlags struct {
	EnableBilling   bool `json:"enable_billing"`
	HideLLMSettings bool `json:"hide_llm_settings"`
	EnableJira      bool `json:"enable_jira"`
	EnableJiraDC    bool `json:"enable_jira_dc"`
	EnableLinear    bool `json:"enable_linear"`
}

// ConversationConfig answers GET /api/conversations/{id}/config, which the web app polls
// while a conversation is open.
type ConversationConfig struct {
	RuntimeID *string `json:"runtime_id" doc:"The conversation's sandbox; null while it has none."`
	SessionID string  `json:"session_id" doc:"The conversation's id."`
}

// ServerInfo answers GET /server_info, on the main listener and the agent-server base: the
// agent server's fields and the app server's.
type ServerInfo struct {
	Title         string    `json:"title"`
	Version       string    `json:"version"`
	APIVersion    string    `json:"api_version" doc:"The version of this HTTP interface (the OpenAPI document's)."`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime" doc:"Seconds since the server started."`
	IdleSeconds   float64   `json:"idle_time" doc:"Seconds since the server last served a request."`
	AppMode       string    `json:"app_mode" doc:"Always oss."`
	Docs          string    `json:"docs" doc:"Where the API's description is."`
}

// CatalogPageQuery is the paging of the model and provider searches; the page id is an
// offset, as the lists are short and fixed while the server runs.
type CatalogPageQuery struct {
	PageID string `query:"page_id"`
	Limit  int    `query:"limit" wire:"min=1,max=100,default=50"`
}

// ModelSearchQuery is the query of GET /api/v1/config/models/search.
type ModelSearchQuery struct {
	CatalogPageQuery
	Query      *string `query:"query" doc:"Names that contain this, ignoring case."`
	VerifiedEq *bool   `query:"verified__eq"`
	ProviderEq *string `query:"provider__eq"`
}

// ProviderSearchQuery is the query of GET /api/v1/config/providers/search.
type ProviderSearchQuery struct {
	CatalogPageQuery
	Query      *string `query:"query" doc:"Names that contain this, ignoring case."`
	VerifiedEq *bool   `query:"verified__eq"`
}

// LLMModel is a model clients may name in llm_model, as provider/name.
type LLMModel struct {
	Provider *string `json:"provider" doc:"The routing prefix of the model's name: openai or anthropic."`
	Name     string  `json:"name"`
	Verified bool    `json:"verified" doc:"agentd knows the model's context window and prices."`
}

// LLMModelPage is a page of models.
type LLMModelPage struct {
	Items      []LLMModel `json:"items"`
	NextPageID *string    `json:"next_page_id"`
}

// LLMProvider is a wire protocol agentd speaks to models.
type LLMProvider struct {
	Name     string `json:"name"`
	Verified bool   `json:"verified"`
}

// LLMProviderPage is a page of providers.
type LLMProviderPage struct {
	Items      []LLMProvider `json:"items"`
	NextPageID *string       `json:"next_page_id"`
}
