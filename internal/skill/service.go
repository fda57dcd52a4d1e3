package skill

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// MaxUserSkills bounds the skills one user keeps.
const MaxUserSkills = 100

// Service keeps users' own skills. Safe for concurrent use.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service; now nil means time.Now.
func NewService(st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now}
}

// Create stores a new skill of the user's: ErrExists when the name is taken, ErrTooMany when
// the user keeps MaxUserSkills already. Triggers are cleaned as a file's are.
func (s *Service) Create(ctx context.Context, u UserSkill) (UserSkill, error) {
	var err error
	if u.Triggers, err = CleanTriggers(u.Triggers); err != nil {
		return UserSkill{}, err
	}
	u.CreatedAt = s.now().UTC().Truncate(time.Microsecond)
	u.UpdatedAt = u.CreatedAt
	if err := s.store.CreateUserSkill(ctx, u, MaxUserSkills); err != nil {
		return UserSkill{}, fmt.Errorf("create skill %q: %w", u.Name, err)
	}
	return u, nil
}

// Get returns one of the user's skills.
func (s *Service) Get(ctx context.Context, userID, name string) (UserSkill, error) {
	return s.store.GetUserSkill(ctx, userID, name)
}

// Search pages through the user's skills, oldest first.
func (s *Service) Search(ctx context.Context, userID string, q paging.Query) ([]UserSkill, string, error) {
	return s.store.ListUserSkills(ctx, userID, q)
}

// Update replaces the triggers, description and content of one of the user's skills.
func (s *Service) Update(ctx context.Context, u UserSkill) (UserSkill, error) {
	var err error
	if u.Triggers, err = CleanTriggers(u.Triggers); err != nil {
		return UserSkill{}, err
	}
	old, err := s.store.GetUserSkill(ctx, u.UserID, u.Name)
	if err != nil {
		return UserSkill{}, err
	}
	u.CreatedAt = old.CreatedAt
	u.UpdatedAt = s.now().UTC().Truncate(time.Microsecond)
	if err := s.store.UpdateUserSkill(ctx, u); err != nil {
		return UserSkill{}, fmt.Errorf("update skill %q: %w", u.Name, err)
	}
	return u, nil
}

// Delete removes one of the user's skills.
func (s *Service) Delete(ctx context.Context, userID, name string) error {
	return s.store.DeleteUserSkill(ctx, userID, name)
}

// All returns every skill of the user's, as conversations load them, oldest first.
func All(ctx context.Context, st Store, userID string) ([]Skill, error) {
	var out []Skill
	q := paging.Query{Limit: paging.MaxLimit}
	for {
		page, next, err := st.ListUserSkills(ctx, userID, q)
		if err != nil {
			return nil, fmt.Errorf("list skills of %s: %w", userID, err)
		}
		for _, u := range page {
			out = append(out, u.Skill())
		}
		if next == "" {
			return out, nil
		}
		q.Cursor = next
	}
}
