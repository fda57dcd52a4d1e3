package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/gitprovider"
)

// The current generation's git browsing, at OpenHands' /api/v1/git paths: the same provider
// calls as the V0 routes, in pages of items and next_page_id. A page_id is the provider's
// page number, which clients treat as opaque.

// maxScannedPages bounds the provider pages one search reads looking for a match, so that a
// query nothing matches costs a bounded number of provider calls per request.
const maxScannedPages = 10

// pageNumber reads a page_id this server handed out; "" is the first page.
func pageNumber(pageID string) (int, error) {
	if pageID == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(pageID)
	if err != nil || n < 1 {
		return 0, problem("value_error", "Value error, invalid page_id: pass back a next_page_id this server returned", "query", "page_id")
	}
	return n, nil
}

func nextPageID(page int) *string { return ptr(strconv.Itoa(page)) }

// contains is whether name matches a search query: case-insensitive, "" matches all.
func contains(name, query string) bool {
	return strings.Contains(strings.ToLower(name), strings.ToLower(strings.TrimSpace(query)))
}

func (a *API) searchRepositories(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.RepositorySearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	if q.Query == "" && q.SortOrder != "" {
		return errStatus(http.StatusBadRequest, "sort_order is taken only with a query: the caller's repositories come most recently pushed first")
	}
	page, err := pageNumber(q.PageID)
	if err != nil {
		return err
	}
	out := apitypes.RepositorySearchPage{Items: []apitypes.Repository{}}
	for scanned := 1; ; scanned++ {
		pages, err := a.d.GitProviders.Repositories(r.Context(), caller(r).ID, string(q.Provider), page, q.Limit)
		if err != nil {
			return err
		}
		hasNext := false
		for _, p := range pages {
			for _, repo := range p.Items {
				if contains(repo.FullName, q.Query) {
					out.Items = append(out.Items, repositoryView(p.Provider, repo))
				}
			}
			hasNext = hasNext || p.HasNext
		}
		page++
		if !hasNext {
			break
		}
		if len(out.Items) > 0 || scanned == maxScannedPages {
			out.NextPageID = nextPageID(page)
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// searchInstallations lists what the caller's repositories live under at a provider, as
// OpenHands does: GitHub App installations, Bitbucket workspaces, Data Center projects. GitLab
// has none: a 400, as in OpenHands.
func (a *API) searchInstallations(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.InstallationSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	page, err := pageNumber(q.PageID)
	if err != nil {
		return err
	}
	api, err := a.d.GitProviders.API(r.Context(), caller(r).ID, string(q.Provider))
	if err != nil {
		return err
	}
	p, err := api.Installations(r.Context(), page, q.Limit)
	if errors.Is(err, gitprovider.ErrUnsupported) {
		return errStatus(http.StatusBadRequest, "Provider "+string(q.Provider)+" has no installations or workspaces")
	}
	if err != nil {
		return err
	}
	out := apitypes.InstallationPage{Items: p.Items}
	if out.Items == nil {
		out.Items = []string{}
	}
	if p.HasNext {
		out.NextPageID = nextPageID(page + 1)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) searchBranches(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.BranchSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	page, err := pageNumber(q.PageID)
	if err != nil {
		return err
	}
	out := apitypes.BranchSearchPage{Items: []apitypes.Branch{}}
	for scanned := 1; ; scanned++ {
		_, p, err := a.d.GitProviders.Branches(r.Context(), caller(r).ID, string(q.Provider), q.Repository, page, q.Limit)
		if err != nil {
			return err
		}
		for _, b := range p.Items {
			if contains(b.Name, q.Query) {
				out.Items = append(out.Items, branchView(b))
			}
		}
		page++
		if !p.HasNext {
			break
		}
		if len(out.Items) > 0 || scanned == maxScannedPages {
			out.NextPageID = nextPageID(page)
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) searchSuggestedTasks(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.SuggestedTaskSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	page, err := pageNumber(q.PageID)
	if err != nil {
		return err
	}
	// The providers have no listing of suggested tasks to page through: gather them all,
	// as the V0 route does, and answer one page.
	tasks, err := a.d.GitProviders.SuggestedTasks(r.Context(), caller(r).ID)
	if err != nil {
		return err
	}
	out := apitypes.SuggestedTaskPage{Items: []apitypes.SuggestedTask{}}
	start := min((page-1)*q.Limit, len(tasks))
	end := min(start+q.Limit, len(tasks))
	for _, t := range tasks[start:end] {
		out.Items = append(out.Items, taskView(t))
	}
	if end < len(tasks) {
		out.NextPageID = nextPageID(page + 1)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
