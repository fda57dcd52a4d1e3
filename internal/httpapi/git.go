package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/gitprovider"
)

func providerName(p *apitypes.ProviderType) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func (a *API) userRepositories(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.RepositoryListQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	pages, err := a.d.GitProviders.Repositories(r.Context(), caller(r).ID, providerName(q.SelectedProvider), q.Page, q.PerPage)
	if err != nil {
		return err
	}
	out := []apitypes.Repository{}
	for _, p := range pages {
		var link *string
		if p.HasNext {
			// OpenHands' clients read the next page's number from a Link header on the
			// repositories, as GitHub sends it.
			next := url.Values{"selected_provider": {p.Provider}, "page": {strconv.Itoa(q.Page + 1)}, "per_page": {strconv.Itoa(q.PerPage)}}
			l := fmt.Sprintf(`<%s/api/user/repositories?%s>; rel="next"`, a.d.PublicURL, next.Encode())
			link = &l
		}
		for _, repo := range p.Items {
			v := repositoryView(p.Provider, repo)
			v.LinkHeader = link
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func repositoryView(provider string, repo gitprovider.Repository) apitypes.Repository {
	stars, owner := repo.Stars, repo.OwnerType
	return apitypes.Repository{ID: repo.ID, FullName: repo.FullName, GitProvider: apitypes.ProviderType(provider),
		IsPublic: !repo.Private, StargazersCount: &stars, PushedAt: repo.PushedAt,
		OwnerType: &owner, MainBranch: nonEmpty(repo.DefaultBranch)}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *API) repositoryBranches(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.BranchListQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	_, page, err := a.d.GitProviders.Branches(r.Context(), caller(r).ID, providerName(q.SelectedProvider), q.Repository, q.Page, q.PerPage)
	if err != nil {
		return err
	}
	out := apitypes.PaginatedBranchesResponse{Branches: []apitypes.Branch{}, HasNextPage: page.HasNext,
		CurrentPage: q.Page, PerPage: q.PerPage, TotalCount: page.Total}
	for _, b := range page.Items {
		out.Branches = append(out.Branches, branchView(b))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func branchView(b gitprovider.Branch) apitypes.Branch {
	return apitypes.Branch{Name: b.Name, CommitSHA: b.CommitSHA, Protected: b.Protected, LastPushDate: b.LastPush}
}

func (a *API) suggestedTasks(w http.ResponseWriter, r *http.Request) error {
	tasks, err := a.d.GitProviders.SuggestedTasks(r.Context(), caller(r).ID)
	if err != nil {
		return err
	}
	out := []apitypes.SuggestedTask{}
	for _, t := range tasks {
		out = append(out, taskView(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func taskView(t gitprovider.Task) apitypes.SuggestedTask {
	return apitypes.SuggestedTask{GitProvider: apitypes.ProviderType(t.Provider), TaskType: apitypes.TaskType(t.Type),
		Repo: t.Repository, IssueNumber: t.Number, Title: t.Title}
}

// checkRepository makes sure, before a conversation is stored, that the caller's tokens
// reach its repository, so that a conversation is never created on one it cannot clone. V0
// answers 401 as OpenHands does; V1 a 422 at selected_repository. A provider that fails or
// cannot be reached is a 502 on both.
func (a *API) checkRepository(r *http.Request, repository, provider *string, v1 bool) error {
	if repository == nil || strings.TrimSpace(*repository) == "" {
		return nil
	}
	p := ""
	if provider != nil {
		p = *provider
	}
	_, err := a.d.GitProviders.Remote(r.Context(), caller(r).ID, p, *repository)
	var ge *gitprovider.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ge) || errors.Is(err, gitprovider.ErrUnavailable):
		return err
	case v1:
		return problem("value_error", "Value error, "+ge.ClientMessage(), "body", "selected_repository")
	}
	return errStatus(http.StatusUnauthorized, "Unable to access repo "+*repository+": "+ge.ClientMessage())
}
