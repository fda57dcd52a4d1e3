package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/settings"
)

// The agent server's own settings routes, which OpenHands' SDK reads through a workspace
// (RemoteWorkspace.get_llm, get_secrets): a sandbox's agent server keeps the settings and
// secrets of its owner. The settings are the owner's, as GET /api/v1/settings shows them; the
// secrets are those the sandbox's conversations were given, as the sandbox-scoped secret
// routes list them, so that no key reads more of the owner's secrets here than there.

// exposeSecretsHeader asks an agent server's GET /api/settings to show the secret settings.
const exposeSecretsHeader = "X-Expose-Secrets"

func (a *API) agentServerSettings(w http.ResponseWriter, r *http.Request) error {
	ctx, owner := r.Context(), caller(r)
	if r.URL.Query().Has("expose_secrets") {
		// As OpenHands' agent server: a query string ends up in logs.
		return errStatus(http.StatusBadRequest, "The query parameter expose_secrets is not taken here: send the header X-Expose-Secrets: plaintext")
	}
	expose, err := exposeSecrets(r.Header.Get(exposeSecretsHeader))
	if err != nil {
		return err
	}
	if expose {
		if err := a.checkExposure(r, owner); err != nil {
			return err
		}
	}
	v, err := a.d.Settings.Get(ctx, owner.ID)
	if err != nil && !errors.Is(err, settings.ErrNotFound) {
		return err
	}
	// An owner who never saved settings still has the defaults.
	view := settingsV1View(v)
	if expose {
		if err := a.exposeSecrets(ctx, owner.ID, &view); err != nil {
			return err
		}
	}
	p := view.SettingsV1Product
	writeJSON(w, http.StatusOK, apitypes.AgentServerSettings{
		AgentSettings: view.AgentSettings, ConversationSettings: view.ConversationSettings,
		LLMAPIKeyIsSet: view.LLMAPIKeySet,
		AppPreferences: apitypes.AppPreferences{Language: p.Language, UserConsentsToAnalytics: p.UserConsentsToAnalytics,
			EnableSoundNotifications: p.EnableSoundNotifications, GitUserName: p.GitUserName, GitUserEmail: p.GitUserEmail,
			DisabledSkills: []string{}},
	})
	return nil
}

// exposeSecrets reads X-Expose-Secrets: plaintext (or true, as older agent servers took it)
// shows the secrets; absent or false does not. agentd gives no encrypted secrets.
func exposeSecrets(h string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(h)) {
	case "", "false":
		return false, nil
	case "plaintext", "true":
		return true, nil
	}
	return false, problem("enum", "Input should be 'plaintext' or 'false': agentd gives no encrypted secrets", "header", exposeSecretsHeader)
}

// checkExposure refuses (403, saying why) to show the owner's secrets to a request that does
// not carry both the owner's API key, as Authorization: Bearer, and the session key of one of
// the owner's sandboxes: the rule of GET /api/v1/users/me?expose_secrets=true.
func (a *API) checkExposure(r *http.Request, owner auth.User) error {
	const what = "X-Expose-Secrets"
	bearer := bearerKey(r)
	if bearer == "" {
		return errStatus(http.StatusForbidden, what+" needs your API key as Authorization: Bearer, beside the sandbox's session key as X-Session-API-Key")
	}
	u, err := a.d.Auth.Authenticate(r.Context(), bearer)
	if err != nil {
		return err
	}
	if u.ID != owner.ID {
		return errStatus(http.StatusForbidden, what+": the API key is not the sandbox owner's")
	}
	return a.checkOwnSessionKey(r.Context(), u, r.Header.Get(sessionKeyHeader), what)
}
