package httpapi

import (
	"io"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
)

// What a sandbox may read of its owner's settings, as OpenHands' sandbox-scoped routes: the
// secrets its conversations were given, names and then values. These routes take the session
// key of the sandbox in their path and no user key, so that a user's own key never reads a
// secret's value back.

// sandboxSettingsPrefix starts the path of every sandbox-scoped settings route.
const sandboxSettingsPrefix = "/api/v1/sandboxes/{sandbox_id}/settings/"

func (a *API) listSandboxSecrets(w http.ResponseWriter, r *http.Request) error {
	secrets, err := a.d.Conversations.SandboxSecrets(r.Context(), caller(r).ID, r.PathValue("sandbox_id"))
	if err != nil {
		return err
	}
	out := apitypes.SecretNamesResponse{Secrets: make([]apitypes.SecretNameItem, len(secrets))}
	for i, s := range secrets {
		out.Secrets[i] = apitypes.SecretNameItem{Name: s.Name, Description: optString(s.Description)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getSandboxSecret(w http.ResponseWriter, r *http.Request) error {
	secrets, err := a.d.Conversations.SandboxSecrets(r.Context(), caller(r).ID, r.PathValue("sandbox_id"))
	if err != nil {
		return err
	}
	name := r.PathValue("secret_name")
	for _, s := range secrets {
		if s.Name == name {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, s.Value)
			return nil
		}
	}
	return errStatus(http.StatusNotFound, "Secret not found")
}
