package settings

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// UnmarshalJSON reads a server given as its URL alone, as the API accepts it (and as a
// stored start request holds it).
func (s *MCPSSEServer) UnmarshalJSON(b []byte) error {
	var u string
	if json.Unmarshal(b, &u) == nil {
		*s = MCPSSEServer{URL: strings.TrimSpace(u)}
		return nil
	}
	type plain MCPSSEServer
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	s.URL = strings.TrimSpace(s.URL)
	return nil
}

// UnmarshalJSON reads a server given as its URL alone, as the API accepts it (and as a
// stored start request holds it).
func (s *MCPSHTTPServer) UnmarshalJSON(b []byte) error {
	var u string
	if json.Unmarshal(b, &u) == nil {
		*s = MCPSHTTPServer{URL: strings.TrimSpace(u)}
		return nil
	}
	type plain MCPSHTTPServer
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	s.URL = strings.TrimSpace(s.URL)
	return nil
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

// SplitArgs splits a stdio server's arguments given as one string into words, with
// POSIX-shell quoting rules and no expansion, as OpenHands does.
func SplitArgs(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("no closing quotation")
	}
	if escaped {
		return nil, fmt.Errorf("no escaped character")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ParseEnv reads a stdio server's environment given as one string, "K=V,K2=V2", as OpenHands
// does; bad are the pairs without "=".
func ParseEnv(s string) (env map[string]string, bad []string) {
	env = map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			bad = append(bad, pair)
			continue
		}
		env[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return env, bad
}

// UnmarshalJSON reads args and env also in the one-string shapes the API accepts (and a
// stored start request holds).
func (s *MCPStdioServer) UnmarshalJSON(b []byte) error {
	var loose struct {
		Name    string          `json:"name"`
		Command string          `json:"command"`
		Args    json.RawMessage `json:"args"`
		Env     json.RawMessage `json:"env"`
	}
	if err := json.Unmarshal(b, &loose); err != nil {
		return err
	}
	*s = MCPStdioServer{Name: strings.TrimSpace(loose.Name), Command: strings.TrimSpace(loose.Command)}
	var one string
	switch {
	case len(loose.Args) == 0 || string(loose.Args) == "null":
	case json.Unmarshal(loose.Args, &one) == nil:
		args, err := SplitArgs(one)
		if err != nil {
			return fmt.Errorf("args: %w", err)
		}
		s.Args = args
	default:
		if err := json.Unmarshal(loose.Args, &s.Args); err != nil {
			return fmt.Errorf("args: %w", err)
		}
	}
	switch {
	case len(loose.Env) == 0 || string(loose.Env) == "null":
	case json.Unmarshal(loose.Env, &one) == nil:
		var bad []string
		if s.Env, bad = ParseEnv(one); len(bad) > 0 {
			return fmt.Errorf("env: %q is not KEY=VALUE", bad[0])
		}
	default:
		if err := json.Unmarshal(loose.Env, &s.Env); err != nil {
			return fmt.Errorf("env: %w", err)
		}
	}
	return nil
}
