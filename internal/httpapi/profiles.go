package httpapi

import (
	"errors"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/settings"
)

// LLM profiles: named LLM settings a user switches between (/api/v1/settings/profiles).

// profileName reads the profile name of the path.
func profileName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if !apitypes.ProfileNamePattern.MatchString(name) {
		return "", problem("value_error", "Value error, a profile name is 1-64 letters, digits, '.', '_' or '-'", "path", "name")
	}
	return name, nil
}

func (a *API) listProfiles(w http.ResponseWriter, r *http.Request) error {
	list, active, err := a.d.Settings.Profiles(r.Context(), caller(r).ID)
	if err != nil {
		return err
	}
	out := apitypes.ProfileList{Profiles: []apitypes.ProfileInfo{}}
	for _, p := range list {
		out.Profiles = append(out.Profiles, apitypes.ProfileInfo{Name: p.Name, Model: p.Model, BaseURL: p.BaseURL, APIKeySet: p.APIKeySet})
	}
	if active != "" {
		out.ActiveProfile = &active
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getProfile(w http.ResponseWriter, r *http.Request) error {
	name, err := profileName(r)
	if err != nil {
		return err
	}
	list, _, err := a.d.Settings.Profiles(r.Context(), caller(r).ID)
	if err != nil {
		return err
	}
	for _, p := range list {
		if p.Name == name {
			writeJSON(w, http.StatusOK, apitypes.ProfileDetail{Name: name, APIKeySet: p.APIKeySet,
				Config: apitypes.LLMSettingsV1{Model: p.Model, BaseURL: p.BaseURL}})
			return nil
		}
	}
	return profileNotFound(name)
}

func profileNotFound(name string) error {
	return errStatus(http.StatusNotFound, "Profile '"+name+"' not found")
}

func (a *API) saveProfile(w http.ResponseWriter, r *http.Request) error {
	name, err := profileName(r)
	if err != nil {
		return err
	}
	var req apitypes.ProfileSaveRequest
	if r.ContentLength != 0 {
		if _, err := decodeBody(r, &req); err != nil {
			return err
		}
	}
	uid := caller(r).ID
	withKey := req.IncludeSecrets == nil || *req.IncludeSecrets
	if req.LLM == nil {
		err = a.d.Settings.SnapshotProfile(r.Context(), uid, name, withKey)
	} else {
		if req.LLM.BaseURL != nil {
			if err := a.checkUserURL(r, *req.LLM.BaseURL, "base_url", "llm"); err != nil {
				return err
			}
		}
		key := req.LLM.APIKey
		if !withKey {
			none := ""
			key = &none
		}
		if req.PreserveExistingAPIKey {
			key = nil
		}
		err = a.d.Settings.SaveProfile(r.Context(), uid, settings.Profile{Name: name, Model: nonBlank(req.LLM.Model), BaseURL: nonBlank(req.LLM.BaseURL)}, key)
	}
	switch {
	case errors.Is(err, settings.ErrNotFound):
		return errStatus(http.StatusNotFound, "Settings not found")
	case errors.Is(err, settings.ErrTooManyProfiles):
		return errStatus(http.StatusConflict, "Profile limit reached (10). Delete a profile before saving a new one.")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.ProfileMutation{Name: name, Message: "Profile '" + name + "' saved"})
	return nil
}

// nonBlank is s, or nil when it is absent or blank.
func nonBlank(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

func (a *API) deleteProfile(w http.ResponseWriter, r *http.Request) error {
	name, err := profileName(r)
	if err != nil {
		return err
	}
	if err := a.d.Settings.DeleteProfile(r.Context(), caller(r).ID, name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.ProfileMutation{Name: name, Message: "Profile '" + name + "' deleted"})
	return nil
}

func (a *API) activateProfile(w http.ResponseWriter, r *http.Request) error {
	name, err := profileName(r)
	if err != nil {
		return err
	}
	p, err := a.d.Settings.ActivateProfile(r.Context(), caller(r).ID, name)
	if errors.Is(err, settings.ErrProfileNotFound) {
		return profileNotFound(name)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.ProfileActivated{Name: name, Message: "Switched to profile '" + name + "'", Model: p.Model})
	return nil
}

func (a *API) renameProfile(w http.ResponseWriter, r *http.Request) error {
	name, err := profileName(r)
	if err != nil {
		return err
	}
	var req apitypes.ProfileRenameRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	err = a.d.Settings.RenameProfile(r.Context(), caller(r).ID, name, req.NewName)
	switch {
	case errors.Is(err, settings.ErrProfileNotFound):
		return profileNotFound(name)
	case errors.Is(err, settings.ErrProfileExists):
		return errStatus(http.StatusConflict, "Profile '"+req.NewName+"' already exists")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.ProfileMutation{Name: req.NewName, Message: "Profile '" + name + "' renamed to '" + req.NewName + "'"})
	return nil
}
