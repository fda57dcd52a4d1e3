package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/settings"
)

type providerRow struct {
	Provider string
	Host     string
}

type settingsData struct {
	Model, BaseURL string
	DefaultModel   string
	KeySet         bool
	Providers      []providerRow
	Secrets        []customsecret.Info
	Keys           []auth.APIKey
	// SessionKeyID is the key this browser signed in with.
	SessionKeyID string
	MCP          *settings.MCPConfig
	// MCPJSON is the MCP configuration (without keys) the script edits.
	MCPJSON string
}

func (a *App) settingsPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	ctx := r.Context()
	d := settingsData{DefaultModel: a.d.DefaultModel, SessionKeyID: s.KeyID}
	v, err := a.d.Settings.Get(ctx, s.User.ID)
	switch {
	case errors.Is(err, settings.ErrNotFound):
	case err != nil:
		return err
	default:
		d.KeySet, d.MCP = v.LLMAPIKeySet, v.MCP
		if v.LLMModel != nil {
			d.Model = *v.LLMModel
		}
		if v.LLMBaseURL != nil {
			d.BaseURL = *v.LLMBaseURL
		}
	}
	mcp := d.MCP
	if mcp == nil {
		mcp = &settings.MCPConfig{}
	}
	b, err := json.Marshal(mcp)
	if err != nil {
		return err
	}
	d.MCPJSON = string(b)
	hosts, err := a.d.GitProviders.Hosts(ctx, s.User.ID)
	if err != nil {
		return err
	}
	for p, h := range hosts {
		row := providerRow{Provider: p}
		if h != nil {
			row.Host = *h
		}
		d.Providers = append(d.Providers, row)
	}
	slices.SortFunc(d.Providers, func(x, y providerRow) int { return strings.Compare(x.Provider, y.Provider) })
	if d.Secrets, _, err = collectPages(maxListed, func(q paging.Query) ([]customsecret.Info, string, error) {
		return a.d.CustomSecrets.Search(ctx, s.User.ID, "", q)
	}); err != nil {
		return err
	}
	if d.Keys, err = a.d.Auth.ListKeys(ctx, s.User, ""); err != nil {
		return err
	}
	a.render(w, r, http.StatusOK, "settings", s, "Settings", d)
	return nil
}

type usersData struct {
	Users []auth.User
	More  bool
}

// usersPage lists the users, for admins.
func (a *App) usersPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	users, more, err := collectPages(maxListed, func(q paging.Query) ([]auth.User, string, error) {
		return a.d.Auth.ListUsers(r.Context(), s.User, q)
	})
	if err != nil {
		return err
	}
	a.render(w, r, http.StatusOK, "users", s, "Users", usersData{Users: users, More: more})
	return nil
}
