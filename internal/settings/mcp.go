package settings

import "encoding/json"

// mcpSecret names the user's MCP configuration among the sealed settings: its servers' API
// keys are secrets, so the whole configuration is sealed.
const mcpSecret = "mcp_config"

// MCPConfig is a user's MCP tool servers. Its stored form is the API's mcp_config object.
type MCPConfig struct {
	SSEServers   []MCPSSEServer   `json:"sse_servers"`
	StdioServers []MCPStdioServer `json:"stdio_servers"`
	SHTTPServers []MCPSHTTPServer `json:"shttp_servers"`
}

// MCPSSEServer is an SSE tool server.
type MCPSSEServer struct {
	URL    string  `json:"url"`
	APIKey *string `json:"api_key"`
}

// MCPSHTTPServer is a streamable-HTTP tool server.
type MCPSHTTPServer struct {
	URL    string  `json:"url"`
	APIKey *string `json:"api_key"`
	// Timeout is in seconds; nil means the default.
	Timeout *int `json:"timeout"`
}

// MCPStdioServer is a tool server started as a process inside the sandbox.
type MCPStdioServer struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// keepKeys gives each server of m sent without an API key the key stored for the same kind
// of server at the same URL, so that a client can send back the configuration it read (which
// has no keys) without losing them.
func (m *MCPConfig) keepKeys(old *MCPConfig) {
	if old == nil {
		return
	}
	sse := map[string]*string{}
	for _, s := range old.SSEServers {
		sse[s.URL] = s.APIKey
	}
	for i, s := range m.SSEServers {
		if s.APIKey == nil {
			m.SSEServers[i].APIKey = sse[s.URL]
		}
	}
	shttp := map[string]*string{}
	for _, s := range old.SHTTPServers {
		shttp[s.URL] = s.APIKey
	}
	for i, s := range m.SHTTPServers {
		if s.APIKey == nil {
			m.SHTTPServers[i].APIKey = shttp[s.URL]
		}
	}
}

// dropKeys leaves the servers' API keys out of m.
func (m *MCPConfig) dropKeys() {
	for i := range m.SSEServers {
		m.SSEServers[i].APIKey = nil
	}
	for i := range m.SHTTPServers {
		m.SHTTPServers[i].APIKey = nil
	}
}

// decodeMCP reads the unsealed stored MCP configuration.
func decodeMCP(plain []byte) (*MCPConfig, error) {
	var m MCPConfig
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, &CorruptError{Field: mcpSecret, Err: err}
	}
	return &m, nil
}

// SecretValues returns the servers' API keys and the values of their environments (stdio
// servers get their tokens there). A nil configuration has none.
func (m *MCPConfig) SecretValues() []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, s := range m.SSEServers {
		if s.APIKey != nil {
			out = append(out, *s.APIKey)
		}
	}
	for _, s := range m.SHTTPServers {
		if s.APIKey != nil {
			out = append(out, *s.APIKey)
		}
	}
	for _, s := range m.StdioServers {
		for _, v := range s.Env {
			out = append(out, v)
		}
	}
	return out
}
