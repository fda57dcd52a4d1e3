package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"

	"github.com/agentd/agentd/internal/wire"
)

func (a *API) alive(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.AliveResponse{Status: "ok"})
	return nil
}

func (a *API) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, "OK")
	return nil
}

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(a.openapi)
	return nil
}

// APIVersion is the version of the HTTP interface described by the OpenAPI document.
const APIVersion = "1.0.0"

// OpenAPI returns the OpenAPI document of the API, generated from the route table and the
// wire types. docs/openapi.json is a checked-in copy; a test fails when they drift.
func OpenAPI() ([]byte, error) {
	var a API
	rts := a.routes()
	ops := make([]wire.Operation, len(rts))
	for i, rt := range rts {
		ops[i] = rt.op
	}
	return wire.OpenAPI(wire.Info{
		Title:       "agentd",
		Version:     APIVersion,
		Description: "Runs software-agent conversations inside sandboxes. Compatible with the OpenHands server API (V1 under /api/v1, legacy V0 under /api).",
	}, ops)
}
