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
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
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
