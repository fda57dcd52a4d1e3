package customsecret

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
)

// Service keeps users' custom secrets. Safe for concurrent use.
type Service struct {
	store  Store
	sealer secret.Sealer
	now    func() time.Time
	// changed is told the user whose secrets changed; see OnSecretsChange.
	changed func(userID string)
}

// NewService returns a Service. now may be nil.
func NewService(store Store, sealer secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, sealer: sealer, now: now}
}

// OnSecretsChange registers fn to be called after a user's secrets may have changed, so that
// their conversations mask the new values. Call it before the service is used.
func (s *Service) OnSecretsChange(fn func(userID string)) { s.changed = fn }

func (s *Service) notify(userID string) {
	if s.changed != nil {
		s.changed(userID)
	}
}

// Info is what clients are shown of a secret.
type Info struct {
	Name        string
	Description string
}

// Create stores a new secret. *InvalidError for a bad name, description or value; ErrExists
// when the user has a secret of that name; ErrTooMany when they keep MaxPerUser already.
func (s *Service) Create(ctx context.Context, userID string, p Plain) error {
	if err := firstError(CheckName(p.Name), CheckDescription(p.Description), CheckValue(p.Value)); err != nil {
		return err
	}
	sealed, err := s.sealer.Seal([]byte(p.Value))
	if err != nil {
		return fmt.Errorf("create secret: seal: %w", err)
	}
	now := s.now().UTC()
	sec := Secret{Name: p.Name, Description: p.Description, ValueSealed: sealed, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateCustomSecret(ctx, userID, sec, MaxPerUser); err != nil {
		return fmt.Errorf("create secret: %w", err)
	}
	// A new value is masked at once, even before a conversation names it: the user may have
	// typed it into one already.
	s.notify(userID)
	return nil
}

// Search pages through the user's secrets by name, without their values.
func (s *Service) Search(ctx context.Context, userID, nameContains string, q paging.Query) ([]Info, string, error) {
	ss, next, err := s.store.ListCustomSecrets(ctx, userID, nameContains, q)
	if err != nil {
		return nil, "", fmt.Errorf("search secrets: %w", err)
	}
	out := make([]Info, len(ss))
	for i, sec := range ss {
		out[i] = Info{Name: sec.Name, Description: sec.Description}
	}
	return out, next, nil
}

// Update changes what u sets of the secret called name; nil fields keep their value.
// *InvalidError, ErrNotFound, or ErrExists for a new name that another secret has.
func (s *Service) Update(ctx context.Context, userID, name string, u Update) error {
	if err := u.check(); err != nil {
		return err
	}
	next, err := s.store.GetCustomSecret(ctx, userID, name)
	if err != nil {
		return fmt.Errorf("update secret: %w", err)
	}
	if u.Name != nil {
		next.Name = *u.Name
	}
	if u.Description != nil {
		next.Description = *u.Description
	}
	if u.Value != nil {
		if next.ValueSealed, err = s.sealer.Seal([]byte(*u.Value)); err != nil {
			return fmt.Errorf("update secret: seal: %w", err)
		}
	}
	next.UpdatedAt = s.now().UTC()
	if err := s.store.UpdateCustomSecret(ctx, userID, name, next); err != nil {
		return fmt.Errorf("update secret: %w", err)
	}
	s.notify(userID)
	return nil
}

// Update is a change to a secret; nil fields keep their value.
type Update struct {
	Name        *string
	Description *string
	Value       *string
}

func (u Update) check() error {
	if u.Name != nil {
		if err := CheckName(*u.Name); err != nil {
			return err
		}
	}
	if u.Description != nil {
		if err := CheckDescription(*u.Description); err != nil {
			return err
		}
	}
	if u.Value != nil {
		return CheckValue(*u.Value)
	}
	return nil
}

// Delete removes the secret called name; ErrNotFound when there is none. Conversations that
// named it no longer get it.
func (s *Service) Delete(ctx context.Context, userID, name string) error {
	if err := s.store.DeleteCustomSecret(ctx, userID, name); err != nil {
		return fmt.Errorf("delete secret: %w", err)
	}
	s.notify(userID)
	return nil
}

// Lookup returns the user's secrets with those names, opened, in the order of names; names
// the user has no secret for are left out.
func (s *Service) Lookup(ctx context.Context, userID string, names []string) ([]Plain, error) {
	if len(names) == 0 {
		return nil, nil
	}
	all, err := s.store.CustomSecrets(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("look up secrets: %w", err)
	}
	var out []Plain
	for _, name := range names {
		i := slices.IndexFunc(all, func(sec Secret) bool { return sec.Name == name })
		if i < 0 {
			continue
		}
		v, err := s.sealer.Open(all[i].ValueSealed)
		if err != nil {
			return nil, fmt.Errorf("look up secrets: open %s: %w", name, err)
		}
		out = append(out, Plain{Name: name, Description: all[i].Description, Value: string(v)})
	}
	return out, nil
}

// SecretValues returns the values of all the user's secrets, which their conversations mask
// in what they record.
func (s *Service) SecretValues(ctx context.Context, userID string) ([]string, error) {
	all, err := s.store.CustomSecrets(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("custom secrets of %s: %w", userID, err)
	}
	out := make([]string, 0, len(all))
	for _, sec := range all {
		v, err := s.sealer.Open(sec.ValueSealed)
		if err != nil {
			return nil, fmt.Errorf("custom secrets of %s: open %s: %w", userID, sec.Name, err)
		}
		out = append(out, string(v))
	}
	return out, nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
