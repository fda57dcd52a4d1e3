package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Settings are a user's non-secret settings. A nil field is one the user never set: readers
// apply their own default. The JSON names are the API's and the stored form's.
type Settings struct {
	Language                            *string `json:"language,omitempty"`
	Agent                               *string `json:"agent,omitempty"`
	MaxIterations                       *int    `json:"max_iterations,omitempty"`
	SecurityAnalyzer                    *string `json:"security_analyzer,omitempty"`
	ConfirmationMode                    *bool   `json:"confirmation_mode,omitempty"`
	LLMModel                            *string `json:"llm_model,omitempty"`
	LLMBaseURL                          *string `json:"llm_base_url,omitempty"`
	RemoteRuntimeResourceFactor         *int    `json:"remote_runtime_resource_factor,omitempty"`
	EnableDefaultCondenser              *bool   `json:"enable_default_condenser,omitempty"`
	EnableSoundNotifications            *bool   `json:"enable_sound_notifications,omitempty"`
	EnableProactiveConversationStarters *bool   `json:"enable_proactive_conversation_starters,omitempty"`
	UserConsentsToAnalytics             *bool   `json:"user_consents_to_analytics,omitempty"`
	SandboxBaseContainerImage           *string `json:"sandbox_base_container_image,omitempty"`
	SandboxRuntimeContainerImage        *string `json:"sandbox_runtime_container_image,omitempty"`
	// MaxBudgetPerTask is the most one conversation may spend on model calls, in US dollars:
	// its agent stops with MaxBudgetReached once the accumulated cost reaches it.
	MaxBudgetPerTask *float64 `json:"max_budget_per_task,omitempty"`
	CondenserMaxSize *int     `json:"condenser_max_size,omitempty"`
	GitUserName      *string  `json:"git_user_name,omitempty"`
	GitUserEmail     *string  `json:"git_user_email,omitempty"`
}

// CorruptError: a stored value cannot be read as its setting's type. agentd stores only
// values it validated, so this is damage to the store, never a client's mistake.
type CorruptError struct {
	// Field is the setting's name (max_iterations, mcp_config); empty when the stored
	// object as a whole is unreadable.
	Field string
	Err   error
}

func (e *CorruptError) Error() string {
	if e.Field == "" {
		return "settings: stored values: " + e.Err.Error()
	}
	return "settings: stored value of " + e.Field + ": " + e.Err.Error()
}

func (e *CorruptError) Unwrap() error { return e.Err }

// decodeValues reads a stored values object. Keys it does not know are skipped.
func decodeValues(raw json.RawMessage) (Settings, error) {
	var s Settings
	if len(raw) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Settings{}, &CorruptError{Field: te.Field,
				Err: fmt.Errorf("json: cannot unmarshal %s into %s", te.Value, te.Type)}
		}
		return Settings{}, &CorruptError{Err: err}
	}
	return s, nil
}

// mergeValues returns the stored values object with the fields set in u replacing theirs.
// Every other key, unknown ones included, is kept as stored.
func mergeValues(stored json.RawMessage, u Settings) (json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &values); err != nil {
			return nil, &CorruptError{Err: err}
		}
		if values == nil { // a stored JSON null
			values = map[string]json.RawMessage{}
		}
	}
	// omitempty leaves out exactly the nil fields: what u sets.
	set, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	changes := map[string]json.RawMessage{}
	if err := json.Unmarshal(set, &changes); err != nil {
		return nil, err
	}
	maps.Copy(values, changes)
	return json.Marshal(values)
}
