package skill

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MCPServer is an MCP tool server a repository skill declares in the mcp_tools key of its
// frontmatter, as OpenHands' microagents do. The conversation adds it to its own servers; it
// runs, like them, in the sandbox.
type MCPServer struct {
	// Name names the server: a stdio server's own name, or the key it was given; empty for
	// a V0 URL server, which is named after its host.
	Name string `json:"name,omitempty"`
	// Transport is "stdio", "sse" or "shttp".
	Transport string `json:"transport"`
	// Command, Args and Env start a stdio server.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL, APIKey and TimeoutSeconds reach an SSE or streamable-HTTP server.
	URL            string `json:"url,omitempty"`
	APIKey         string `json:"api_key,omitempty"`
	TimeoutSeconds int    `json:"timeout,omitempty"`
}

// MCP transports of MCPServer.
const (
	MCPStdio = "stdio"
	MCPSSE   = "sse"
	MCPSHTTP = "shttp"
)

// MaxMCPServers bounds the servers one skill declares.
const MaxMCPServers = 16

var (
	mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// parseMCPTools reads mcp_tools in either of the shapes OpenHands' skills use: the V0
// configuration ({stdio_servers: [...], sse_servers: [...], shttp_servers: [...]}), or a map
// of servers by name, bare or under mcpServers (FastMCP's configuration), where a server with
// a url is remote (transport sse, or streamable HTTP: http, streamable-http or shttp; by
// default SSE when the URL path ends in /sse) and one with a command is stdio. Each server is
// checked with the rules of a conversation's mcp_config.
func parseMCPTools(n *yaml.Node) ([]MCPServer, error) {
	if n == nil || n.Kind == 0 || n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("mcp_tools: want a mapping")
	}
	var out []MCPServer
	if isV0MCP(n) {
		var v0 struct {
			Stdio []struct {
				Name    string            `yaml:"name"`
				Command string            `yaml:"command"`
				Args    []string          `yaml:"args"`
				Env     map[string]string `yaml:"env"`
			} `yaml:"stdio_servers"`
			SSE   []remoteV0 `yaml:"sse_servers"`
			SHTTP []remoteV0 `yaml:"shttp_servers"`
		}
		if err := n.Decode(&v0); err != nil {
			return nil, fmt.Errorf("mcp_tools: %s", yamlProblem(err))
		}
		for _, s := range v0.Stdio {
			out = append(out, MCPServer{Name: strings.TrimSpace(s.Name), Transport: MCPStdio, Command: strings.TrimSpace(s.Command), Args: s.Args, Env: s.Env})
		}
		for _, s := range v0.SSE {
			out = append(out, MCPServer{Transport: MCPSSE, URL: strings.TrimSpace(s.URL), APIKey: s.APIKey})
		}
		for _, s := range v0.SHTTP {
			out = append(out, MCPServer{Transport: MCPSHTTP, URL: strings.TrimSpace(s.URL), APIKey: s.APIKey, TimeoutSeconds: s.Timeout})
		}
	} else {
		byName := n
		if v := mappingValue(n, "mcpServers"); v != nil {
			byName = v
		}
		var servers map[string]struct {
			Command   string            `yaml:"command"`
			Args      []string          `yaml:"args"`
			Env       map[string]string `yaml:"env"`
			URL       string            `yaml:"url"`
			Transport string            `yaml:"transport"`
			Type      string            `yaml:"type"`
			Timeout   int               `yaml:"timeout"`
		}
		if err := byName.Decode(&servers); err != nil {
			return nil, fmt.Errorf("mcp_tools: %s", yamlProblem(err))
		}
		for name, s := range servers {
			srv := MCPServer{Name: strings.TrimSpace(name), Command: strings.TrimSpace(s.Command), Args: s.Args, Env: s.Env,
				URL: strings.TrimSpace(s.URL), TimeoutSeconds: s.Timeout}
			transport := strings.ToLower(strings.TrimSpace(cmpOr(s.Transport, s.Type)))
			switch {
			case srv.URL == "" || transport == MCPStdio:
				srv.Transport = MCPStdio
			case transport == MCPSSE:
				srv.Transport = MCPSSE
			case transport == "" && strings.HasSuffix(strings.TrimRight(urlPath(srv.URL), "/"), "/sse"):
				srv.Transport = MCPSSE
			case transport == "" || transport == "http" || transport == "streamable-http" || transport == MCPSHTTP:
				srv.Transport = MCPSHTTP
			default:
				return nil, fmt.Errorf("mcp_tools: server %s: unknown transport %q", name, transport)
			}
			out = append(out, srv)
		}
		slices.SortFunc(out, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	}
	if len(out) > MaxMCPServers {
		return nil, fmt.Errorf("mcp_tools: more than %d servers", MaxMCPServers)
	}
	for _, s := range out {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("mcp_tools: %w", err)
		}
	}
	return out, nil
}

// remoteV0 is a V0 SSE or streamable-HTTP server: an object, or its URL alone.
type remoteV0 struct {
	URL     string `yaml:"url"`
	APIKey  string `yaml:"api_key"`
	Timeout int    `yaml:"timeout"`
}

func (r *remoteV0) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		r.URL = n.Value
		return nil
	}
	type plain remoteV0
	return n.Decode((*plain)(r))
}

// isV0MCP reports whether the mapping n is a V0 MCP configuration: it has one of the V0 keys.
func isV0MCP(n *yaml.Node) bool {
	for _, k := range []string{"stdio_servers", "sse_servers", "shttp_servers"} {
		if mappingValue(n, k) != nil {
			return true
		}
	}
	return false
}

// mappingValue returns the value of key in the mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

// check applies the rules of a conversation's mcp_config to s.
func (s MCPServer) check() error {
	switch s.Transport {
	case MCPStdio:
		switch {
		case !mcpName.MatchString(s.Name):
			return fmt.Errorf("server name %q: want 1 to 64 letters, digits, '-' or '_'", s.Name)
		case s.Command == "":
			return fmt.Errorf("server %s: no command", s.Name)
		case strings.ContainsAny(s.Command, " \t"):
			return fmt.Errorf("server %s: the command holds spaces (arguments belong in args)", s.Name)
		}
		for k := range s.Env {
			if !envName.MatchString(k) {
				return fmt.Errorf("server %s: invalid environment variable name %q", s.Name, k)
			}
		}
	default:
		if s.Name != "" && !mcpName.MatchString(s.Name) {
			return fmt.Errorf("server name %q: want 1 to 64 letters, digits, '-' or '_'", s.Name)
		}
		u, err := url.Parse(s.URL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("server url %q: want an absolute URL with a host", s.URL)
		}
		if sc := strings.ToLower(u.Scheme); sc != "http" && sc != "https" && sc != "ws" && sc != "wss" {
			return fmt.Errorf("server url %q: the scheme must be http, https, ws or wss", s.URL)
		}
	}
	if s.TimeoutSeconds < 0 || s.TimeoutSeconds > 3600 {
		return fmt.Errorf("server %s: timeout %d s is not within 1..3600", cmpOr(s.Name, s.URL), s.TimeoutSeconds)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
