package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/secret"
)

// Names of the secret settings. They are sealed at rest and never returned.
const (
	LLMAPIKey     = "llm_api_key"
	SearchAPIKey  = "search_api_key"
	SandboxAPIKey = "sandbox_api_key"
)

// Service reads and merges users' settings. Safe for concurrent use.
type Service struct {
	store  Store
	sealer secret.Sealer
	now    func() time.Time
}

// NewService returns a Service. now may be nil.
func NewService(store Store, sealer secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, sealer: sealer, now: now}
}

// Update changes some settings. Values holds non-secret fields to set (JSON values); Secrets
// holds secret fields to set, where an empty string clears the secret. Fields in neither keep
// their stored value.
type Update struct {
	Values  map[string]json.RawMessage
	Secrets map[string]string
}

// View is a user's settings as they may be shown: values and which secrets are set.
type View struct {
	Values     map[string]json.RawMessage
	SecretsSet map[string]bool
	UpdatedAt  time.Time
}

// Get returns the user's settings; ErrNotFound when none were ever stored.
func (s *Service) Get(ctx context.Context, userID string) (View, error) {
	r, err := s.store.GetSettings(ctx, userID)
	if err != nil {
		return View{}, err
	}
	v := View{Values: map[string]json.RawMessage{}, SecretsSet: map[string]bool{}, UpdatedAt: r.UpdatedAt}
	if len(r.Values) > 0 {
		if err := json.Unmarshal(r.Values, &v.Values); err != nil {
			return View{}, fmt.Errorf("get settings: decode stored values: %w", err)
		}
	}
	for name := range r.Secrets {
		v.SecretsSet[name] = true
	}
	return v, nil
}

// Apply merges u into the user's stored settings in one write.
func (s *Service) Apply(ctx context.Context, userID string, u Update) error {
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		r = Record{UserID: userID}
	} else if err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	values := map[string]json.RawMessage{}
	if len(r.Values) > 0 {
		if err := json.Unmarshal(r.Values, &values); err != nil {
			return fmt.Errorf("update settings: decode stored values: %w", err)
		}
	}
	for k, v := range u.Values {
		values[k] = v
	}
	if r.Secrets == nil {
		r.Secrets = map[string][]byte{}
	}
	for name, val := range u.Secrets {
		if val == "" {
			delete(r.Secrets, name)
			continue
		}
		sealed, err := s.sealer.Seal([]byte(val))
		if err != nil {
			return fmt.Errorf("update settings: seal %s: %w", name, err)
		}
		r.Secrets[name] = sealed
	}
	if r.Values, err = json.Marshal(values); err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	r.UpdatedAt = s.now().UTC()
	if err := s.store.PutSettings(ctx, r); err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	return nil
}

// Secret returns one of the user's secret settings; ok is false when it is not set.
func (s *Service) Secret(ctx context.Context, userID, name string) (value string, ok bool, err error) {
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read secret setting: %w", err)
	}
	sealed, ok := r.Secrets[name]
	if !ok {
		return "", false, nil
	}
	plain, err := s.sealer.Open(sealed)
	if err != nil {
		return "", false, fmt.Errorf("open secret setting %s: %w", name, err)
	}
	return string(plain), true, nil
}
