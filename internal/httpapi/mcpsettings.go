package httpapi

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/settings"
)

// mcpSecretName stores a user's MCP configuration as one sealed value: its servers' API keys
// are secrets, so the whole configuration is kept out of the plain settings.
const mcpSecretName = "mcp_config"

// storedMCP reads the user's MCP configuration (with keys), or nil.
func (a *API) storedMCP(ctx context.Context, userID string) (*apitypes.MCPConfig, error) {
	raw, ok, err := a.d.Settings.Secret(ctx, userID, mcpSecretName)
	if err != nil || !ok {
		return nil, err
	}
	var m apitypes.MCPConfig
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// mcpUpdate turns a new MCP configuration into a settings update. A server sent without an
// api_key keeps the key stored for the same URL, so a client can send back what it read.
func (a *API) mcpUpdate(ctx context.Context, userID string, m *apitypes.MCPConfig, u *settings.Update) error {
	old, err := a.storedMCP(ctx, userID)
	if err != nil {
		return err
	}
	if old != nil {
		keys := map[string]*string{}
		for _, s := range old.SSEServers {
			keys["sse "+s.URL] = s.APIKey
		}
		for _, s := range old.SHTTPServers {
			keys["shttp "+s.URL] = s.APIKey
		}
		for i, s := range m.SSEServers {
			if s.APIKey == nil {
				m.SSEServers[i].APIKey = keys["sse "+s.URL]
			}
		}
		for i, s := range m.SHTTPServers {
			if s.APIKey == nil {
				m.SHTTPServers[i].APIKey = keys["shttp "+s.URL]
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if u.Secrets == nil {
		u.Secrets = map[string]string{}
	}
	u.Secrets[mcpSecretName] = string(b)
	delete(u.Values, "mcp_config")
	return nil
}

// shownMCP is the stored MCP configuration with its keys left out.
func (a *API) shownMCP(ctx context.Context, userID string) (*apitypes.MCPConfig, error) {
	m, err := a.storedMCP(ctx, userID)
	if m == nil || err != nil {
		return m, err
	}
	for i := range m.SSEServers {
		m.SSEServers[i].APIKey = nil
	}
	for i := range m.SHTTPServers {
		m.SHTTPServers[i].APIKey = nil
	}
	return m, nil
}
