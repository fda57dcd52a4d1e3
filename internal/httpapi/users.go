package httpapi

import (
	"errors"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
)

func userInfo(u auth.User) apitypes.UserInfo {
	return apitypes.UserInfo{ID: u.ID, Name: u.Name, IsAdmin: u.IsAdmin, CreatedAt: u.CreatedAt}
}

func keyInfo(k auth.APIKey) apitypes.APIKeyInfo {
	return apitypes.APIKeyInfo{ID: k.ID, Name: k.Name, Prefix: k.Prefix, UserID: k.UserID, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt}
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.UserCreateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	u, err := a.d.Auth.CreateUser(r.Context(), caller(r), req.Name, req.IsAdmin)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, userInfo(u))
	return nil
}

func (a *API) searchUsers(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.PageQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	us, next, err := a.d.Auth.ListUsers(r.Context(), caller(r), paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	page := apitypes.UserPage{Items: make([]apitypes.UserInfo, len(us)), NextPageID: optString(next)}
	for i, u := range us {
		page.Items[i] = userInfo(u)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *API) createKey(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.APIKeyCreateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	userID := ""
	if req.UserID != nil {
		userID = *req.UserID
	}
	k, key, err := a.d.Auth.CreateKey(r.Context(), caller(r), userID, req.Name, req.ExpiresAt)
	switch {
	case errors.Is(err, auth.ErrExpiresInPast):
		return problem("value_error", "Value error, expires_at must be in the future", "body", "expires_at")
	case errors.Is(err, auth.ErrNotFound):
		return problem("value_error", "Value error, user not found", "body", "user_id")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.APIKeyCreated{APIKeyInfo: keyInfo(k), Key: key})
	return nil
}

func (a *API) listKeys(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.APIKeyListQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	keys, err := a.d.Auth.ListKeys(r.Context(), caller(r), q.UserID)
	if err != nil {
		return err
	}
	out := make([]apitypes.APIKeyInfo, len(keys))
	for i, k := range keys {
		out[i] = keyInfo(k)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.APIKeyListQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	if err := a.d.Auth.DeleteKey(r.Context(), caller(r), q.UserID, r.PathValue("key_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}
