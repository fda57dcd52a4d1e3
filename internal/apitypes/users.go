package apitypes

import (
	"strings"
	"time"

	"github.com/agentd/agentd/internal/wire"
)

// UserCreateRequest is the body of POST /api/v1/users (admins only).
type UserCreateRequest struct {
	Name    string `json:"name" wire:"required,minlen=1,maxlen=100"`
	IsAdmin bool   `json:"is_admin"`
}

// WireStrict rejects unknown keys.
func (UserCreateRequest) WireStrict() {}

// ValidateWire rejects a blank name, which minlen lets through: names are stored trimmed.
func (r *UserCreateRequest) ValidateWire(c *wire.Checker) {
	if strings.TrimSpace(r.Name) == "" {
		c.ValueError("name cannot be blank", "name")
	}
}

// UserInfo describes a user.
type UserInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKeyCreateRequest is the body of POST /api/keys.
type APIKeyCreateRequest struct {
	Name      string     `json:"name" wire:"required,minlen=1,maxlen=100"`
	UserID    *string    `json:"user_id" doc:"Owner of the new key; only admins may name another user. Default: the caller."`
	ExpiresAt *time.Time `json:"expires_at"`
}

// WireStrict rejects unknown keys.
func (APIKeyCreateRequest) WireStrict() {}

// ValidateWire rejects a blank name, which minlen lets through: names are stored trimmed.
func (r *APIKeyCreateRequest) ValidateWire(c *wire.Checker) {
	if strings.TrimSpace(r.Name) == "" {
		c.ValueError("name cannot be blank", "name")
	}
}

// APIKeyInfo describes a stored key; the key itself is never shown again.
type APIKeyInfo struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// APIKeyCreated answers POST /api/keys: the only time the key is shown.
type APIKeyCreated struct {
	APIKeyInfo
	Key string `json:"key"`
}

// APIKeyListQuery is the query of GET /api/keys.
type APIKeyListQuery struct {
	UserID string `query:"user_id"`
}

// Success is a plain success answer.
type Success struct {
	Success bool `json:"success"`
}

// AliveResponse answers GET /alive.
type AliveResponse struct {
	Status string `json:"status"`
}

// ReadinessResponse answers GET /ready, and GET /health when something does not work.
type ReadinessResponse struct {
	// Status is "ready" or "unavailable".
	Status string `json:"status"`
	// Message says what does not work; absent when ready.
	Message string `json:"message,omitempty"`
	// Checks maps each dependency checked ("store", "sandbox_backend") to "ok" or to what is
	// wrong with it.
	Checks map[string]string `json:"checks"`
}

// CurrentUser answers GET /api/v1/users/me: OpenHands' UserInfo, which is the user's
// settings plus their id, and agentd's own user fields. Secrets are null unless
// expose_secrets was granted.
type CurrentUser struct {
	SettingsV1
	// ExposedLLM is set only in an answer with expose_secrets.
	*ExposedLLM
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
}

// ExposedLLM repeats agent_settings.llm at the top level of GET /api/v1/users/me, where
// OpenHands' SDK reads the LLM to hand on (its cloud workspace's get_llm). Only an answer
// with expose_secrets carries it.
type ExposedLLM struct {
	LLMModel   *string `json:"llm_model" doc:"agent_settings.llm.model; only with expose_secrets=true."`
	LLMBaseURL *string `json:"llm_base_url" doc:"agent_settings.llm.base_url; only with expose_secrets=true."`
	LLMAPIKey  *string `json:"llm_api_key" doc:"agent_settings.llm.api_key, unmasked; only with expose_secrets=true."`
}

// CurrentUserQuery is the query of GET /api/v1/users/me.
type CurrentUserQuery struct {
	ExposeSecrets bool `query:"expose_secrets" doc:"Answer the secret settings unmasked. Only with X-Session-API-Key set to the session key of one of the caller's own sandboxes, beside the caller's key as Authorization: Bearer; otherwise 403."`
}

// UserPage is a page of users, oldest first.
type UserPage struct {
	Items      []UserInfo `json:"items"`
	NextPageID *string    `json:"next_page_id"`
}
