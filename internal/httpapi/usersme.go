package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
)

// GET /api/v1/users/me is OpenHands' UserInfo: the caller's settings and id. OpenHands' SDK
// asks for it with expose_secrets from inside a sandbox, to hand the user's LLM settings to
// the conversations it starts there; so the secrets are shown only to a request that also
// proves it comes from one of the caller's own sandboxes.

func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.CurrentUserQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	ctx, u := r.Context(), caller(r)
	if q.ExposeSecrets {
		if err := a.checkOwnSessionKey(ctx, u, r.Header.Get(sessionKeyHeader), "expose_secrets=true"); err != nil {
			return err
		}
	}
	v, err := a.d.Settings.Get(ctx, u.ID)
	if err != nil && !errors.Is(err, settings.ErrNotFound) {
		return err
	}
	// A user who never saved settings still has the defaults.
	out := apitypes.CurrentUser{SettingsV1: settingsV1View(v), ID: u.ID, Name: u.Name, IsAdmin: u.IsAdmin, CreatedAt: u.CreatedAt}
	if out.ProviderTokensSet, err = a.d.GitProviders.Hosts(ctx, u.ID); err != nil {
		return err
	}
	if q.ExposeSecrets {
		if err := a.exposeSecrets(ctx, u.ID, &out.SettingsV1); err != nil {
			return err
		}
		l := out.AgentSettings.LLM
		out.ExposedLLM = &apitypes.ExposedLLM{LLMModel: l.Model, LLMBaseURL: l.BaseURL, LLMAPIKey: l.APIKey}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkOwnSessionKey refuses (403, saying why, in the name of what asked to expose secrets) a
// session key that is not one of u's sandboxes'.
func (a *API) checkOwnSessionKey(ctx context.Context, u auth.User, key, what string) error {
	if key == "" {
		return errStatus(http.StatusForbidden, what+" needs X-Session-API-Key set to the session key of one of your sandboxes, beside your API key as Authorization: Bearer")
	}
	sb, err := a.d.Sandboxes.SandboxForSessionKey(ctx, key)
	switch {
	case errors.Is(err, sandbox.ErrSessionKey):
		return errStatus(http.StatusForbidden, what+": X-Session-API-Key is not the session key of a sandbox (send your API key as Authorization: Bearer)")
	case err != nil:
		return err
	case sb.OwnerID != u.ID:
		return errStatus(http.StatusForbidden, what+": the session key belongs to another user's sandbox")
	}
	return nil
}

// exposeSecrets fills in the secret settings out holds as null.
func (a *API) exposeSecrets(ctx context.Context, userID string, out *apitypes.SettingsV1) error {
	for name, dst := range map[string]**string{
		settings.LLMAPIKey:     &out.AgentSettings.LLM.APIKey,
		settings.SearchAPIKey:  &out.SearchAPIKey,
		settings.SandboxAPIKey: &out.SandboxAPIKey,
	} {
		v, ok, err := a.d.Settings.Secret(ctx, userID, name)
		if err != nil {
			return err
		}
		if ok {
			*dst = &v
		}
	}
	return nil
}
