package httpapi

import (
	"errors"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/settings"
)

func (a *API) getSettings(w http.ResponseWriter, r *http.Request) error {
	uid := caller(r).ID
	v, err := a.d.Settings.Get(r.Context(), uid)
	if err != nil {
		return err
	}
	out := settingsView(v)
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
	if req.LLMBaseURL != nil {
		if err := a.checkUserURL(r, *req.LLMBaseURL, "llm_base_url"); err != nil {
			return err
		}
	}
	if err := a.d.Settings.Apply(r.Context(), caller(r).ID, settingsUpdate(req)); err != nil {
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
		return providerInputError(err)
	}
	if req.MCPConfig != nil {
		// The MCP servers sent along become the user's MCP settings.
		if err := a.d.Settings.Apply(r.Context(), uid, settings.Update{MCP: settingsMCP(req.MCPConfig)}); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Git providers stored"})
	return nil
}

// providerInputError places a provider host that cannot be used at its field of the body.
func providerInputError(err error) error {
	var ge *gitprovider.Error
	if errors.As(err, &ge) && errors.Is(ge.Kind, gitprovider.ErrBadHost) && ge.Provider != "" {
		return problem("value_error", "Value error, "+ge.ClientMessage(), "body", "provider_tokens", ge.Provider, "host")
	}
	return err
}

func (a *API) unsetProviderTokens(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.GitProviders.Unset(r.Context(), caller(r).ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Unset Git provider tokens"})
	return nil
}
