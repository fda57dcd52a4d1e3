package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
)

// gitInfo answers who the caller is at a git provider: the web app shows it and names
// commits after it.
func (a *API) gitInfo(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.GitInfoQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	_, u, err := a.d.GitProviders.UserInfo(r.Context(), caller(r).ID, providerName(q.Provider))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.UserGitInfo{ID: u.ID, Login: u.Login, AvatarURL: u.AvatarURL,
		Company: optString(u.Company), Name: optString(u.Name), Email: optString(u.Email)})
	return nil
}
