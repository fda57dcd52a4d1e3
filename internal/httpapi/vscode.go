package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
)

// The agent server's editor routes. OpenHands' agent servers may run a VS Code server beside
// the agent; agentd's sandboxes run none, and say so in the answers OpenHands' clients read
// as "not available" (a null URL, a status that is neither enabled nor running), so that the
// web app shows the editor as unavailable instead of failing.

// noEditor is the message of a sandbox without an editor.
const noEditor = "agentd runs no VS Code server in its sandboxes"

func (a *API) vscodeURL(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.VSCodeURLQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.VSCodeURL{})
	return nil
}

func (a *API) vscodeStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.VSCodeStatus{Message: noEditor})
	return nil
}
