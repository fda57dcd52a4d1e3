package apitypes

import (
	"regexp"

	"github.com/agentd/agentd/internal/wire"
)

// ProfileNamePattern is what a profile name may be, as in OpenHands.
var ProfileNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ProfileInfo is one profile in the list: never its key.
type ProfileInfo struct {
	Name      string  `json:"name"`
	Model     *string `json:"model"`
	BaseURL   *string `json:"base_url"`
	APIKeySet bool    `json:"api_key_set"`
}

// ProfileList answers GET /api/v1/settings/profiles.
type ProfileList struct {
	Profiles      []ProfileInfo `json:"profiles"`
	ActiveProfile *string       `json:"active_profile"`
}

// ProfileDetail answers GET /api/v1/settings/profiles/{name}.
type ProfileDetail struct {
	Name      string        `json:"name"`
	Config    LLMSettingsV1 `json:"config" doc:"The profile's LLM; api_key is always null."`
	APIKeySet bool          `json:"api_key_set"`
}

// ProfileSaveRequest is the body of POST /api/v1/settings/profiles/{name}; an absent body
// saves the active LLM settings.
type ProfileSaveRequest struct {
	LLM                    *LLMDiff `json:"llm" doc:"The profile's LLM; absent: the active LLM settings. Without api_key a replaced profile keeps its key."`
	IncludeSecrets         *bool    `json:"include_secrets" doc:"Default true: save the key too."`
	PreserveExistingAPIKey bool     `json:"preserve_existing_api_key" doc:"Keep the replaced profile's key whatever llm says."`
}

// WireStrict rejects unknown keys.
func (ProfileSaveRequest) WireStrict() {}

// ProfileRenameRequest is the body of POST /api/v1/settings/profiles/{name}/rename.
type ProfileRenameRequest struct {
	NewName string `json:"new_name" wire:"required"`
}

// WireStrict rejects unknown keys.
func (ProfileRenameRequest) WireStrict() {}

// ValidateWire checks the new name as the path's name is checked.
func (r *ProfileRenameRequest) ValidateWire(c *wire.Checker) {
	if !ProfileNamePattern.MatchString(r.NewName) {
		c.ValueError("new_name must be 1-64 letters, digits, '.', '_' or '-'", "new_name")
	}
}

// ProfileMutation answers a save, delete or rename.
type ProfileMutation struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// ProfileActivated answers an activation.
type ProfileActivated struct {
	Name    string  `json:"name"`
	Message string  `json:"message"`
	Model   *string `json:"model"`
}
