package httpapi

import (
	"net/http"
	"slices"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/llm"
)

// The legacy calls of OpenHands' web app that describe the server: the app stops at its
// first call (/api/options/config) when it is not answered.

// appMode is OpenHands' mode for a self-hosted server: the web app shows no login.
const appMode = "oss"

// agentName is the one agent agentd runs, by the name OpenHands gives its coding agent.
const agentName = "CodeActAgent"

func (a *API) optionsConfig(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.OptionsConfig{AppMode: appMode, ProvidersConfigured: []apitypes.ProviderType{}})
	return nil
}

func (a *API) optionsModels(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.modelNames())
	return nil
}

func (a *API) optionsAgents(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, []string{agentName})
	return nil
}

// optionsSecurityAnalyzers answers an empty list: agentd has no security analyzer, so no
// setting of one can have an effect.
func (a *API) optionsSecurityAnalyzers(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, []string{})
	return nil
}

// modelNames are the models offered to clients: those agentd knows, and the server's own
// model under the name it is configured with.
func (a *API) modelNames() []string {
	names := llm.KnownModels()
	if m := a.d.DefaultModel; m != "" && !slices.Contains(names, m) {
		names = append(names, m)
		slices.Sort(names)
	}
	return names
}

func (a *API) conversationConfig(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	v, err := a.d.Conversations.Get(r.Context(), caller(r).ID, id)
	if err != nil {
		return err
	}
	out := apitypes.ConversationConfig{SessionID: v.ID}
	if v.SandboxID != "" {
		out.RuntimeID = &v.SandboxID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
