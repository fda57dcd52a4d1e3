package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/paging"
)

// What the current web app reads of the server: its config, the models and providers it
// offers in its settings, and the server's version.

func (a *API) webClientConfig(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.WebClientConfig{
		AppMode:             appMode,
		ProvidersConfigured: []apitypes.ProviderType{},
		FaultyModels:        []string{},
		UpdatedAt:           a.started,
	})
	return nil
}

func (a *API) serverInfo(w http.ResponseWriter, r *http.Request) error {
	now := a.d.Now()
	writeJSON(w, http.StatusOK, apitypes.ServerInfo{
		Title: "agentd", Version: a.d.Version, APIVersion: APIVersion, AppMode: appMode,
		StartedAt: a.started, UptimeSeconds: now.Sub(a.started).Seconds(),
		IdleSeconds: now.Sub(time.Unix(0, a.lastSeen.Load())).Seconds(), Docs: "/openapi.json",
	})
	return nil
}

// catalogModels are the models of modelNames split at their provider prefix. A model is
// verified when agentd knows its window and prices.
func (a *API) catalogModels() []apitypes.LLMModel {
	known := llm.KnownModels()
	var out []apitypes.LLMModel
	for _, name := range a.modelNames() {
		m := apitypes.LLMModel{Name: name, Verified: slices.Contains(known, name)}
		if p, n, ok := strings.Cut(name, "/"); ok {
			m.Provider, m.Name = &p, n
		}
		out = append(out, m)
	}
	return out
}

func (a *API) searchModels(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.ModelSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	models := slices.DeleteFunc(a.catalogModels(), func(m apitypes.LLMModel) bool {
		return !matches(m.Name, q.Query) || q.VerifiedEq != nil && m.Verified != *q.VerifiedEq ||
			q.ProviderEq != nil && (m.Provider == nil || *m.Provider != *q.ProviderEq)
	})
	items, next, err := offsetPage(models, q.CatalogPageQuery)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.LLMModelPage{Items: items, NextPageID: next})
	return nil
}

// searchProviders lists the providers of the models, the wire protocols agentd speaks
// first (they are the verified ones).
func (a *API) searchProviders(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.ProviderSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	var providers []apitypes.LLMProvider
	for _, p := range llm.Providers() {
		providers = append(providers, apitypes.LLMProvider{Name: p, Verified: true})
	}
	for _, m := range a.catalogModels() {
		if m.Provider != nil && !slices.ContainsFunc(providers, func(p apitypes.LLMProvider) bool { return p.Name == *m.Provider }) {
			providers = append(providers, apitypes.LLMProvider{Name: *m.Provider})
		}
	}
	providers = slices.DeleteFunc(providers, func(p apitypes.LLMProvider) bool {
		return !matches(p.Name, q.Query) || q.VerifiedEq != nil && p.Verified != *q.VerifiedEq
	})
	items, next, err := offsetPage(providers, q.CatalogPageQuery)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.LLMProviderPage{Items: items, NextPageID: next})
	return nil
}

// verifiedProviders answers newer web apps' GET /api/v1/config/providers: the names of the
// providers that searchProviders marks verified.
func (a *API) verifiedProviders(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, llm.Providers())
	return nil
}

// matches says whether name contains the query, ignoring case; a nil query matches all.
func matches(name string, query *string) bool {
	return query == nil || strings.Contains(strings.ToLower(name), strings.ToLower(*query))
}

// offsetPage cuts one page of a short fixed list; the page id is the offset of the page's
// first item.
func offsetPage[T any](all []T, q apitypes.CatalogPageQuery) ([]T, *string, error) {
	start := 0
	if q.PageID != "" {
		n, err := strconv.Atoi(q.PageID)
		if err != nil || n < 0 || n > len(all) {
			return nil, nil, paging.ErrBadCursor
		}
		start = n
	}
	end := min(start+q.Limit, len(all))
	items := append([]T{}, all[start:end]...)
	if end == len(all) {
		return items, nil, nil
	}
	next := strconv.Itoa(end)
	return items, &next, nil
}
