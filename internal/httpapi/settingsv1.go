package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/settings"
)

// The current generation's settings: one stored truth with /api/settings, shown grouped.

func (a *API) getSettingsV1(w http.ResponseWriter, r *http.Request) error {
	uid := caller(r).ID
	v, err := a.d.Settings.Get(r.Context(), uid)
	if err != nil {
		return err
	}
	out := settingsV1View(v)
	if out.ProviderTokensSet, err = a.d.GitProviders.Hosts(r.Context(), uid); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// legacyNestedKeys are the whole objects a V1 update may not send: OpenHands refuses them so
// that saving one settings page never overwrites what another page owns.
var legacyNestedKeys = []string{"agent_settings", "conversation_settings"}

func (a *API) storeSettingsV1(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.SettingsV1Update
	data, err := decodeBody(r, &req)
	if err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) == nil {
		for _, k := range legacyNestedKeys {
			if _, ok := top[k]; ok {
				return problem("value_error", "Value error, send "+k+"_diff with the settings to change instead of "+k, "body", k)
			}
		}
	}
	u := settingsV1Update(req)
	if u.LLMBaseURL != nil {
		if err := a.checkUserURL(r, *u.LLMBaseURL, "base_url", "agent_settings_diff", "llm"); err != nil {
			return err
		}
	}
	if err := a.d.Settings.Apply(r.Context(), caller(r).ID, u); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Settings stored"})
	return nil
}

// settingsV1View is GET /api/v1/settings for v, but for provider_tokens_set.
func settingsV1View(v settings.View) apitypes.SettingsV1 {
	s := v.Settings
	agent := agentName
	if s.Agent != nil && *s.Agent != "" {
		agent = *s.Agent
	}
	return apitypes.SettingsV1{
		SettingsV1Product: apitypes.SettingsV1Product{
			Language:                           s.Language,
			RemoteRuntimeResourceFactor:        s.RemoteRuntimeResourceFactor,
			EnableSoundNotifications:           s.EnableSoundNotifications,
			EnableProactiveConversationStarter: s.EnableProactiveConversationStarters,
			UserConsentsToAnalytics:            s.UserConsentsToAnalytics,
			SandboxBaseContainerImage:          s.SandboxBaseContainerImage,
			SandboxRuntimeContainerImage:       s.SandboxRuntimeContainerImage,
			MaxBudgetPerTask:                   s.MaxBudgetPerTask,
			GitUserName:                        s.GitUserName,
			GitUserEmail:                       s.GitUserEmail,
		},
		AgentSettings: apitypes.AgentSettingsV1{
			SchemaVersion: 1, AgentKind: "llm", Agent: agent,
			LLM: apitypes.LLMSettingsV1{Model: s.LLMModel, BaseURL: s.LLMBaseURL},
			// The agent condenses unless the user turned it off.
			Condenser: apitypes.CondenserSettings{Enabled: s.EnableDefaultCondenser == nil || *s.EnableDefaultCondenser,
				MaxSize: s.CondenserMaxSize},
		},
		ConversationSettings: apitypes.ConversationSettingsV1{
			SchemaVersion: 1, MaxIterations: s.MaxIterations,
			ConfirmationMode: s.ConfirmationMode != nil && *s.ConfirmationMode,
			SecurityAnalyzer: s.SecurityAnalyzer,
		},
		V1Enabled:       true,
		LLMAPIKeySet:    v.LLMAPIKeySet,
		SearchAPIKeySet: v.SearchAPIKeySet,
	}
}

// settingsV1Update is the update a POST /api/v1/settings body asks for.
func settingsV1Update(req apitypes.SettingsV1Update) settings.Update {
	p := req.SettingsV1Product
	u := settings.Update{
		Settings: settings.Settings{
			Language:                            p.Language,
			RemoteRuntimeResourceFactor:         p.RemoteRuntimeResourceFactor,
			EnableSoundNotifications:            p.EnableSoundNotifications,
			EnableProactiveConversationStarters: p.EnableProactiveConversationStarter,
			UserConsentsToAnalytics:             p.UserConsentsToAnalytics,
			SandboxBaseContainerImage:           p.SandboxBaseContainerImage,
			SandboxRuntimeContainerImage:        p.SandboxRuntimeContainerImage,
			MaxBudgetPerTask:                    p.MaxBudgetPerTask,
			GitUserName:                         p.GitUserName,
			GitUserEmail:                        p.GitUserEmail,
		},
		SearchAPIKey:  req.SearchAPIKey,
		SandboxAPIKey: req.SandboxAPIKey,
	}
	if d := req.AgentSettingsDiff; d != nil {
		if d.Agent != nil {
			name := string(*d.Agent)
			u.Agent = &name
		}
		if d.LLM != nil {
			u.LLMModel, u.LLMBaseURL, u.LLMAPIKey = d.LLM.Model, d.LLM.BaseURL, d.LLM.APIKey
		}
		if d.Condenser != nil {
			u.EnableDefaultCondenser, u.CondenserMaxSize = d.Condenser.Enabled, d.Condenser.MaxSize
		}
	}
	if d := req.ConversationSettingsDiff; d != nil {
		u.MaxIterations, u.ConfirmationMode, u.SecurityAnalyzer = d.MaxIterations, d.ConfirmationMode, d.SecurityAnalyzer
	}
	return u
}
