package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/settings"
)

// secretSettings maps the secret fields of apitypes.Settings to their stored names.
func secretSettings(s *apitypes.Settings) map[string]*string {
	return map[string]*string{
		settings.LLMAPIKey:     s.LLMAPIKey,
		settings.SearchAPIKey:  s.SearchAPIKey,
		settings.SandboxAPIKey: s.SandboxAPIKey,
	}
}

// settingsUpdate splits a decoded settings body into the values and secrets it sets; null
// and absent fields set nothing.
func settingsUpdate(s apitypes.Settings) (settings.Update, error) {
	u := settings.Update{Values: map[string]json.RawMessage{}, Secrets: map[string]string{}}
	for name, v := range secretSettings(&s) {
		if v != nil {
			u.Secrets[name] = *v
		}
	}
	s.LLMAPIKey, s.SearchAPIKey, s.SandboxAPIKey = nil, nil, nil
	b, err := json.Marshal(s)
	if err != nil {
		return u, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return u, err
	}
	for k, v := range all {
		if string(v) != "null" {
			u.Values[k] = v
		}
	}
	return u, nil
}

func (a *API) getSettings(w http.ResponseWriter, r *http.Request) error {
	uid := caller(r).ID
	v, err := a.d.Settings.Get(r.Context(), uid)
	if err != nil {
		return err
	}
	var out apitypes.SettingsView
	b, err := json.Marshal(v.Values)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &out.Settings); err != nil {
		return err
	}
	out.LLMAPIKey, out.SearchAPIKey, out.SandboxAPIKey = nil, nil, nil
	if out.MCPConfig, err = a.shownMCP(r.Context(), uid); err != nil {
		return err
	}
	out.LLMAPIKeySet = v.SecretsSet[settings.LLMAPIKey]
	out.SearchAPIKeySet = v.SecretsSet[settings.SearchAPIKey]
	if out.ProviderTokensSet, err = a.d.GitProviders.Hosts(r.Context(), uid); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) storeSettings(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.Settings
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	uid := caller(r).ID
	u, err := settingsUpdate(req)
	if err != nil {
		return err
	}
	if req.MCPConfig != nil {
		if err := a.mcpUpdate(r.Context(), uid, req.MCPConfig, &u); err != nil {
			return err
		}
	}
	if err := a.d.Settings.Apply(r.Context(), uid, u); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Settings stored"})
	return nil
}

func (a *API) addGitProviders(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.POSTProviderModel
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	uid := caller(r).ID
	in := make([]gitprovider.TokenInput, 0, len(req.ProviderTokens))
	for p, t := range req.ProviderTokens {
		ti := gitprovider.TokenInput{Provider: string(p), Host: t.Host, UserID: t.UserID}
		if t.Token != nil {
			ti.Token = *t.Token
		}
		in = append(in, ti)
	}
	if err := a.d.GitProviders.Store(r.Context(), uid, in); err != nil {
		return err
	}
	if req.MCPConfig != nil {
		// The MCP servers sent along become the user's MCP settings.
		var u settings.Update
		if err := a.mcpUpdate(r.Context(), uid, req.MCPConfig, &u); err != nil {
			return err
		}
		if err := a.d.Settings.Apply(r.Context(), uid, u); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Git providers stored"})
	return nil
}

func (a *API) unsetProviderTokens(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.GitProviders.Unset(r.Context(), caller(r).ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Unset Git provider tokens"})
	return nil
}
