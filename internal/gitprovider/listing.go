package gitprovider

import (
	"context"
	"errors"
)

// RepositoryPage is one page of a provider's repositories.
type RepositoryPage struct {
	Provider string
	Page[Repository]
}

// Repositories lists one page of the user's repositories at provider, or with provider ""
// that page at each of their providers. A provider that fails is left out of an all-provider
// listing (and logged), unless every one fails.
func (s *Service) Repositories(ctx context.Context, userID, provider string, page, perPage int) ([]RepositoryPage, error) {
	stored, plain, err := s.accounts(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []RepositoryPage
	var errs []error
	for i, t := range stored {
		if provider != "" && t.Provider != provider {
			continue
		}
		p, err := s.repositoriesAt(ctx, userID, t, plain[i], page, perPage)
		if err != nil {
			if provider != "" {
				return nil, err
			}
			s.o.Logger.Warn("list repositories", "provider", t.Provider, "user_id", userID, "err", err)
			errs = append(errs, err)
			continue
		}
		out = append(out, RepositoryPage{Provider: t.Provider, Page: p})
	}
	if out == nil && len(errs) > 0 {
		return nil, errs[0]
	}
	if out == nil && len(errs) == 0 {
		return nil, errNoToken(provider)
	}
	return out, nil
}

func (s *Service) repositoriesAt(ctx context.Context, userID string, t Token, token string, page, perPage int) (Page[Repository], error) {
	a, err := s.connect(ctx, userID, t.Provider, t.Host, token)
	if err != nil {
		return Page[Repository]{}, err
	}
	return a.api.Repositories(ctx, page, perPage)
}

// Branches lists one page of a repository's branches, at the provider whose token reaches it
// (see Remote for how provider "" picks one). It returns that provider.
func (s *Service) Branches(ctx context.Context, userID, provider, repository string, page, perPage int) (string, Page[Branch], error) {
	a, repo, err := s.reach(ctx, userID, provider, repository)
	if err != nil {
		return "", Page[Branch]{}, err
	}
	p, err := a.api.Branches(ctx, repo.FullName, page, perPage)
	return a.provider, p, err
}

// Task types of suggested tasks, as OpenHands names them.
const (
	TaskOpenIssue          = "OPEN_ISSUE"
	TaskMergeConflicts     = "MERGE_CONFLICTS"
	TaskFailingChecks      = "FAILING_CHECKS"
	TaskUnresolvedComments = "UNRESOLVED_COMMENTS"
)

// Task is a suggested task: an issue or pull request that waits for the user.
type Task struct {
	Provider   string
	Type       string
	Repository string
	Number     int
	Title      string
}

// SuggestedTasks gathers, from each of the user's providers, the open issues assigned to
// them and their open pull requests that have conflicts, failing checks or reviews waiting
// for an answer (one task each, in that order of urgency, as OpenHands does). A provider
// that fails is left out (and logged), unless every one fails.
func (s *Service) SuggestedTasks(ctx context.Context, userID string) ([]Task, error) {
	stored, plain, err := s.accounts(ctx, userID)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		return nil, errNoToken("")
	}
	out := []Task{}
	var errs []error
	for i, t := range stored {
		tasks, err := s.tasksAt(ctx, userID, t, plain[i])
		if err != nil {
			s.o.Logger.Warn("suggested tasks", "provider", t.Provider, "user_id", userID, "err", err)
			errs = append(errs, err)
			continue
		}
		out = append(out, tasks...)
	}
	if len(errs) == len(stored) {
		return nil, errs[0]
	}
	return out, nil
}

func (s *Service) tasksAt(ctx context.Context, userID string, t Token, token string) ([]Task, error) {
	a, err := s.connect(ctx, userID, t.Provider, t.Host, token)
	if err != nil {
		return nil, err
	}
	pulls, err := a.api.OpenPullRequests(ctx)
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, pr := range pulls {
		typ := ""
		switch {
		case pr.Conflicts:
			typ = TaskMergeConflicts
		case pr.FailingChecks:
			typ = TaskFailingChecks
		case pr.UnresolvedComments:
			typ = TaskUnresolvedComments
		default:
			continue
		}
		out = append(out, Task{Provider: t.Provider, Type: typ, Repository: pr.Repository, Number: pr.Number, Title: pr.Title})
	}
	issues, err := a.api.AssignedIssues(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return nil, err
	}
	for _, i := range issues {
		out = append(out, Task{Provider: t.Provider, Type: TaskOpenIssue, Repository: i.Repository, Number: i.Number, Title: i.Title})
	}
	return out, nil
}
