package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// LLM profiles: named LLM configurations a user saves and switches between. They live in
// the user's settings record, beside the settings they are copied into, so that switching
// is one write; their API keys are sealed like the settings' own.

// MaxProfiles bounds a user's profiles, as OpenHands does.
const MaxProfiles = 10

// Profile errors.
var (
	ErrProfileNotFound = errors.New("profile not found")
	ErrProfileExists   = errors.New("a profile of that name exists")
	ErrTooManyProfiles = errors.New("too many profiles")
)

// Profile is a named LLM configuration. A nil model or base URL is the server's.
type Profile struct {
	Name    string  `json:"name"`
	Model   *string `json:"model,omitempty"`
	BaseURL *string `json:"base_url,omitempty"`
}

// ProfileView is a profile as it may be shown: whether it has a key, never the key.
type ProfileView struct {
	Profile
	APIKeySet bool
}

// profilesValue is the key of the profiles in Record.Values.
const profilesValue = "llm_profiles"

// profileSecret is the name of a profile's sealed key in Record.Secrets.
func profileSecret(name string) string { return "llm_profile_key:" + name }

// profiles is what Record.Values holds under profilesValue, in the order they were saved.
type profiles struct {
	Active   string    `json:"active,omitempty"`
	Profiles []Profile `json:"profiles"`
}

func (p *profiles) index(name string) int {
	return slices.IndexFunc(p.Profiles, func(x Profile) bool { return x.Name == name })
}

func readProfiles(r Record) (profiles, error) {
	var values map[string]json.RawMessage
	var p profiles
	if len(r.Values) > 0 {
		if err := json.Unmarshal(r.Values, &values); err != nil {
			return p, &CorruptError{Err: err}
		}
	}
	if raw, ok := values[profilesValue]; ok {
		if err := json.Unmarshal(raw, &p); err != nil {
			return p, &CorruptError{Field: profilesValue, Err: err}
		}
	}
	return p, nil
}

func writeProfiles(r *Record, p profiles) error {
	values := map[string]json.RawMessage{}
	if len(r.Values) > 0 {
		if err := json.Unmarshal(r.Values, &values); err != nil {
			return &CorruptError{Err: err}
		}
		if values == nil {
			values = map[string]json.RawMessage{}
		}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	values[profilesValue] = raw
	r.Values, err = json.Marshal(values)
	return err
}

// Profiles returns the user's profiles in the order they were saved, and the active one's
// name ("" for none).
func (s *Service) Profiles(ctx context.Context, userID string) ([]ProfileView, string, error) {
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return []ProfileView{}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("profiles of %s: %w", userID, err)
	}
	p, err := readProfiles(r)
	if err != nil {
		return nil, "", fmt.Errorf("profiles of %s: %w", userID, err)
	}
	out := make([]ProfileView, len(p.Profiles))
	for i, x := range p.Profiles {
		_, set := r.Secrets[profileSecret(x.Name)]
		out[i] = ProfileView{Profile: x, APIKeySet: set}
	}
	return out, p.Active, nil
}

// SaveProfile stores p, replacing the profile of its name. apiKey nil keeps the key a
// replaced profile had; "" stores none. ErrTooManyProfiles when a new profile would pass
// MaxProfiles. Replacing the active profile makes the active settings the new one.
func (s *Service) SaveProfile(ctx context.Context, userID string, p Profile, apiKey *string) error {
	return s.update(ctx, userID, func(r *Record, ps *profiles) error {
		i := ps.index(p.Name)
		switch {
		case i < 0 && len(ps.Profiles) >= MaxProfiles:
			return ErrTooManyProfiles
		case i < 0:
			ps.Profiles = append(ps.Profiles, p)
		default:
			ps.Profiles[i] = p
		}
		switch {
		case apiKey == nil:
		case *apiKey == "":
			delete(r.Secrets, profileSecret(p.Name))
		default:
			if err := s.seal(r.Secrets, profileSecret(p.Name), []byte(*apiKey)); err != nil {
				return err
			}
		}
		if ps.Active == p.Name {
			return s.copyProfile(r, p)
		}
		return nil
	})
}

// SnapshotProfile saves the user's active LLM settings (model, base URL and, with
// withKey, key) as the profile name.
func (s *Service) SnapshotProfile(ctx context.Context, userID, name string, withKey bool) error {
	r, err := s.store.GetSettings(ctx, userID)
	if err != nil {
		return fmt.Errorf("snapshot profile of %s: %w", userID, err)
	}
	v, err := decodeValues(r.Values)
	if err != nil {
		return fmt.Errorf("snapshot profile of %s: %w", userID, err)
	}
	none := ""
	key := &none
	if sealed, ok := r.Secrets[LLMAPIKey]; ok && withKey {
		plain, err := s.sealer.Open(sealed)
		if err != nil {
			return fmt.Errorf("snapshot profile of %s: open %s: %w", userID, LLMAPIKey, err)
		}
		k := string(plain)
		key = &k
	}
	return s.SaveProfile(ctx, userID, Profile{Name: name, Model: v.LLMModel, BaseURL: v.LLMBaseURL}, key)
}

// DeleteProfile removes a profile; removing one that does not exist is not an error.
// Removing the active one leaves the active settings as they are, with no profile active.
func (s *Service) DeleteProfile(ctx context.Context, userID, name string) error {
	err := s.update(ctx, userID, func(r *Record, ps *profiles) error {
		i := ps.index(name)
		if i < 0 {
			return ErrProfileNotFound
		}
		ps.Profiles = slices.Delete(ps.Profiles, i, i+1)
		delete(r.Secrets, profileSecret(name))
		if ps.Active == name {
			ps.Active = ""
		}
		return nil
	})
	if errors.Is(err, ErrProfileNotFound) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// ActivateProfile copies a profile into the user's active LLM settings (model, base URL,
// key) and marks it active. It returns the profile.
func (s *Service) ActivateProfile(ctx context.Context, userID, name string) (Profile, error) {
	var out Profile
	err := s.update(ctx, userID, func(r *Record, ps *profiles) error {
		i := ps.index(name)
		if i < 0 {
			return ErrProfileNotFound
		}
		out, ps.Active = ps.Profiles[i], name
		return s.copyProfile(r, out)
	})
	if errors.Is(err, ErrNotFound) {
		err = ErrProfileNotFound
	}
	return out, err
}

// RenameProfile renames a profile, keeping its place, key and whether it is active.
func (s *Service) RenameProfile(ctx context.Context, userID, from, to string) error {
	err := s.update(ctx, userID, func(r *Record, ps *profiles) error {
		i := ps.index(from)
		switch {
		case i < 0:
			return ErrProfileNotFound
		case from == to:
			return nil
		case ps.index(to) >= 0:
			return ErrProfileExists
		}
		ps.Profiles[i].Name = to
		if sealed, ok := r.Secrets[profileSecret(from)]; ok {
			r.Secrets[profileSecret(to)] = sealed
			delete(r.Secrets, profileSecret(from))
		}
		if ps.Active == from {
			ps.Active = to
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		err = ErrProfileNotFound
	}
	return err
}

// copyProfile makes p the active LLM settings of r: a nil model or base URL clears the
// user's, so that the server's applies, and a profile without a key clears the user's key.
func (s *Service) copyProfile(r *Record, p Profile) error {
	none := ""
	model, base := p.Model, p.BaseURL
	if model == nil {
		model = &none
	}
	if base == nil {
		base = &none
	}
	var err error
	if r.Values, err = mergeValues(r.Values, Settings{LLMModel: model, LLMBaseURL: base}); err != nil {
		return err
	}
	if sealed, ok := r.Secrets[profileSecret(p.Name)]; ok {
		r.Secrets[LLMAPIKey] = sealed
	} else {
		delete(r.Secrets, LLMAPIKey)
	}
	return nil
}

// update runs fn on the user's record and profiles, and stores both; ErrNotFound when the
// user has no settings. The lock keeps concurrent writes from losing each other's changes.
func (s *Service) update(ctx context.Context, userID string, fn func(r *Record, ps *profiles) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.store.GetSettings(ctx, userID)
	if err != nil {
		return fmt.Errorf("update profiles of %s: %w", userID, err)
	}
	ps, err := readProfiles(r)
	if err != nil {
		return fmt.Errorf("update profiles of %s: %w", userID, err)
	}
	if r.Secrets == nil {
		r.Secrets = map[string][]byte{}
	}
	if err := fn(&r, &ps); err != nil {
		return err
	}
	if err := writeProfiles(&r, ps); err != nil {
		return fmt.Errorf("update profiles of %s: %w", userID, err)
	}
	r.UpdatedAt = s.now().UTC()
	if err := s.store.PutSettings(ctx, r); err != nil {
		return fmt.Errorf("update profiles of %s: %w", userID, err)
	}
	if s.changed != nil {
		s.changed(userID)
	}
	return nil
}

// llmChanged says whether an update changes the LLM a user's conversations call: its model,
// base URL or key (newKey, when sent). Sending the stored value again changes nothing.
func (s *Service) llmChanged(r Record, before, after Settings, newKey *string) (bool, error) {
	if deref(before.LLMModel) != deref(after.LLMModel) || deref(before.LLMBaseURL) != deref(after.LLMBaseURL) {
		return true, nil
	}
	if newKey == nil {
		return false, nil
	}
	old := ""
	if sealed, ok := r.Secrets[LLMAPIKey]; ok {
		plain, err := s.sealer.Open(sealed)
		if err != nil {
			return false, fmt.Errorf("open %s: %w", LLMAPIKey, err)
		}
		old = string(plain)
	}
	return old != *newKey, nil
}

// deactivateProfile marks no profile of r active.
func (s *Service) deactivateProfile(r *Record) error {
	ps, err := readProfiles(*r)
	if err != nil || ps.Active == "" {
		return err
	}
	ps.Active = ""
	return writeProfiles(r, ps)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
