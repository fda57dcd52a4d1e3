package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
)

// Users' custom secrets (/api/v1/secrets): a secret's id is its name, as in OpenHands. Values
// go in and never come out.

func (a *API) createSecret(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.CustomSecretCreate
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	p := customsecret.Plain{Name: req.Name, Value: req.Value}
	if req.Description != nil {
		p.Description = *req.Description
	}
	if err := a.d.CustomSecrets.Create(r.Context(), caller(r).ID, p); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.MessageResponse{Message: "Secret created successfully"})
	return nil
}

func (a *API) searchSecrets(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.CustomSecretSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	infos, next, err := a.d.CustomSecrets.Search(r.Context(), caller(r).ID, q.NameContains, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	page := apitypes.CustomSecretPage{Items: make([]apitypes.CustomSecretWithoutValue, len(infos)), NextPageID: optString(next)}
	for i, s := range infos {
		page.Items[i] = apitypes.CustomSecretWithoutValue{Name: s.Name, Description: ptr(s.Description)}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *API) updateSecret(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.CustomSecretUpdate
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Name == nil && req.Description == nil && req.Value == nil {
		return problem("value_error", "Value error, give a name, a description or a value to change", "body")
	}
	u := customsecret.Update{Name: req.Name, Description: req.Description, Value: req.Value}
	if err := a.d.CustomSecrets.Update(r.Context(), caller(r).ID, r.PathValue("secret_id"), u); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Secret updated successfully"})
	return nil
}

func (a *API) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.CustomSecrets.Delete(r.Context(), caller(r).ID, r.PathValue("secret_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.MessageResponse{Message: "Secret deleted successfully"})
	return nil
}
