package httpapi

import (
	"errors"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

func (a *API) searchSandboxes(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.PageQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	owner := caller(r).ID
	ls, next, err := a.d.Sandboxes.SearchVersions(r.Context(), owner, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	// As an apitypes.SandboxPage.
	return writeListed(a, w, listedSandboxes, "items", ls, next, func(ls []paging.Listed) ([]sandbox.Sandbox, error) {
		return a.d.Sandboxes.At(r.Context(), owner, ls)
	})
}

func (a *API) batchGetSandboxes(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.IDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	sbs, err := a.d.Sandboxes.GetMany(r.Context(), caller(r).ID, q.ID)
	if err != nil {
		return err
	}
	out := make([]*apitypes.SandboxInfo, len(sbs))
	for i, sb := range sbs {
		if sb != nil {
			info := a.sandboxInfo(*sb)
			out[i] = &info
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) startSandbox(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.SandboxStartQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	sb, err := a.d.Sandboxes.Start(r.Context(), caller(r).ID, q.SandboxSpecID)
	if errors.Is(err, sandbox.ErrSpecNotFound) {
		return problem("value_error", "Value error, sandbox spec not found", "query", "sandbox_spec_id")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.sandboxInfo(sb))
	return nil
}

func (a *API) pauseSandbox(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Sandboxes.Pause(r.Context(), caller(r).ID, r.PathValue("sandbox_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) resumeSandbox(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Sandboxes.Resume(r.Context(), caller(r).ID, r.PathValue("sandbox_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Sandboxes.Delete(r.Context(), caller(r).ID, r.PathValue("sandbox_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) searchSpecs(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.PageQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	specs, next, err := a.d.Sandboxes.ListSpecs(r.Context(), paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	page := apitypes.SandboxSpecInfoPage{Items: make([]apitypes.SandboxSpecInfo, len(specs)), NextPageID: optString(next)}
	for i, s := range specs {
		page.Items[i] = a.specInfo(s)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *API) batchGetSpecs(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.IDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	specs, err := a.d.Sandboxes.GetSpecs(r.Context(), q.ID)
	if err != nil {
		return err
	}
	out := make([]*apitypes.SandboxSpecInfo, len(specs))
	for i, s := range specs {
		if s != nil {
			info := a.specInfo(*s)
			out[i] = &info
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
