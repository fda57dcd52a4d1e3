package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
)

// The schemas OpenHands' settings pages are drawn from: exactly the settings
// POST /api/v1/settings accepts in agent_settings_diff and conversation_settings_diff, keyed
// by their path in the diff.

func (a *API) agentSettingsSchema(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, agentSchema)
	return nil
}

func (a *API) conversationSettingsSchema(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, conversationSchema)
	return nil
}

func strp(s string) *string { return &s }

// Field prominences, as OpenHands' pages sort them.
const (
	critical = "critical"
	major    = "major"
	minor    = "minor"
)

// field is a schema field of section sec with no dependencies, choices or secret.
func field(sec apitypes.SettingsSectionSchema, key, label, valueType, prominence, description string, def any) apitypes.SettingsFieldSchema {
	return apitypes.SettingsFieldSchema{Key: key, Label: label, Description: strp(description), Section: sec.Key,
		SectionLabel: sec.Label, ValueType: valueType, Default: def, Prominence: prominence,
		DependsOn: []string{}, Choices: []apitypes.SettingsChoice{}, Variant: sec.Variant}
}

var (
	llmVariant = strp("llm")

	agentGeneral   = apitypes.SettingsSectionSchema{Key: "general", Label: "General"}
	agentLLM       = apitypes.SettingsSectionSchema{Key: "llm", Label: "LLM", Variant: llmVariant}
	agentCondenser = apitypes.SettingsSectionSchema{Key: "condenser", Label: "Condenser", Variant: llmVariant}

	agentSchema = apitypes.SettingsSchema{ModelName: "AgentSettings", Sections: []apitypes.SettingsSectionSchema{
		withFields(agentGeneral, func() apitypes.SettingsFieldSchema {
			f := field(agentGeneral, "agent", "Agent", "string", major, "Agent class to use.", agentName)
			f.Choices, f.Variant = []apitypes.SettingsChoice{{Value: agentName, Label: agentName}}, llmVariant
			return f
		}()),
		withFields(agentLLM,
			field(agentLLM, "llm.model", "Model", "string", critical,
				"Model to call, e.g. anthropic/claude-sonnet-4-5 or openai/gpt-4o; null uses the server's.", nil),
			field(agentLLM, "llm.base_url", "Base URL", "string", major,
				"The API's address, for a self-hosted or proxy endpoint; null uses the provider's public API, or the server's endpoint.", nil),
			func() apitypes.SettingsFieldSchema {
				f := field(agentLLM, "llm.api_key", "API Key", "string", critical, "The key sent to the model's API. Stored sealed, never returned.", nil)
				f.Secret = true
				return f
			}(),
		),
		withFields(agentCondenser,
			field(agentCondenser, "condenser.enabled", "Enable memory condensation", "boolean", critical,
				"Summarize older events when the history grows long.", true),
			func() apitypes.SettingsFieldSchema {
				f := field(agentCondenser, "condenser.max_size", "Max size", "integer", minor,
					"Number of events kept before the history is condensed (at least 20); null uses the server's.", nil)
				f.DependsOn = []string{"condenser.enabled"}
				return f
			}(),
		),
	}}

	convGeneral      = apitypes.SettingsSectionSchema{Key: "general", Label: "General"}
	convVerification = apitypes.SettingsSectionSchema{Key: "verification", Label: "Verification"}

	conversationSchema = apitypes.SettingsSchema{ModelName: "ConversationSettings", Sections: []apitypes.SettingsSectionSchema{
		withFields(convGeneral, field(convGeneral, "max_iterations", "Max iterations", "integer", major,
			"Steps a conversation's agent takes before it stops (at least 1); null uses the server's.", nil)),
		withFields(convVerification,
			field(convVerification, "confirmation_mode", "Confirmation mode", "boolean", major,
				"Stored for clients that show it; agentd runs every action without asking.", false),
			func() apitypes.SettingsFieldSchema {
				f := field(convVerification, "security_analyzer", "Security analyzer", "string", major,
					"Stored for clients that show it; agentd has no security analyzer.", nil)
				f.DependsOn = []string{"confirmation_mode"}
				return f
			}(),
		),
	}}
)

func withFields(sec apitypes.SettingsSectionSchema, fields ...apitypes.SettingsFieldSchema) apitypes.SettingsSectionSchema {
	sec.Fields = fields
	return sec
}
