package httpapi

import (
	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/settings"
)

// settingsUpdate is the update a POST /api/settings body asks for: its null and absent
// fields are nil, which keeps their stored value.
func settingsUpdate(s apitypes.Settings) settings.Update {
	return settings.Update{
		Settings: settings.Settings{
			Language:                            s.Language,
			Agent:                               s.Agent,
			MaxIterations:                       s.MaxIterations,
			SecurityAnalyzer:                    s.SecurityAnalyzer,
			ConfirmationMode:                    s.ConfirmationMode,
			LLMModel:                            s.LLMModel,
			LLMBaseURL:                          s.LLMBaseURL,
			RemoteRuntimeResourceFactor:         s.RemoteRuntimeResourceFactor,
			EnableDefaultCondenser:              s.EnableDefaultCondenser,
			EnableSoundNotifications:            s.EnableSoundNotifications,
			EnableProactiveConversationStarters: s.EnableProactiveConversationStarter,
			UserConsentsToAnalytics:             s.UserConsentsToAnalytics,
			SandboxBaseContainerImage:           s.SandboxBaseContainerImage,
			SandboxRuntimeContainerImage:        s.SandboxRuntimeContainerImage,
			MaxBudgetPerTask:                    s.MaxBudgetPerTask,
			CondenserMaxSize:                    s.CondenserMaxSize,
			GitUserName:                         s.GitUserName,
			GitUserEmail:                        s.GitUserEmail,
		},
		LLMAPIKey:     s.LLMAPIKey,
		SearchAPIKey:  s.SearchAPIKey,
		SandboxAPIKey: s.SandboxAPIKey,
		MCP:           settingsMCP(s.MCPConfig),
	}
}

// settingsView is the GET /api/settings answer for v, but for provider_tokens_set, which
// the git providers hold.
func settingsView(v settings.View) apitypes.SettingsView {
	s := v.Settings
	return apitypes.SettingsView{
		Settings: apitypes.Settings{
			Language:                           s.Language,
			Agent:                              s.Agent,
			MaxIterations:                      s.MaxIterations,
			SecurityAnalyzer:                   s.SecurityAnalyzer,
			ConfirmationMode:                   s.ConfirmationMode,
			LLMModel:                           s.LLMModel,
			LLMBaseURL:                         s.LLMBaseURL,
			RemoteRuntimeResourceFactor:        s.RemoteRuntimeResourceFactor,
			EnableDefaultCondenser:             s.EnableDefaultCondenser,
			EnableSoundNotifications:           s.EnableSoundNotifications,
			EnableProactiveConversationStarter: s.EnableProactiveConversationStarters,
			UserConsentsToAnalytics:            s.UserConsentsToAnalytics,
			SandboxBaseContainerImage:          s.SandboxBaseContainerImage,
			SandboxRuntimeContainerImage:       s.SandboxRuntimeContainerImage,
			MCPConfig:                          apiMCP(v.MCP),
			MaxBudgetPerTask:                   s.MaxBudgetPerTask,
			CondenserMaxSize:                   s.CondenserMaxSize,
			GitUserName:                        s.GitUserName,
			GitUserEmail:                       s.GitUserEmail,
		},
		LLMAPIKeySet:    v.LLMAPIKeySet,
		SearchAPIKeySet: v.SearchAPIKeySet,
	}
}
