package apitypes

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/wire"
)

// MCPConfig configures the tool servers of a conversation or a user.
type MCPConfig struct {
	SSEServers   []MCPSSEServer   `json:"sse_servers" doc:"SSE tool servers (an object or a plain URL string each)."`
	StdioServers []MCPStdioServer `json:"stdio_servers" doc:"Stdio tool servers; they run inside the sandbox."`
	SHTTPServers []MCPSHTTPServer `json:"shttp_servers" doc:"Streamable-HTTP tool servers (an object or a plain URL string each)."`
}

// WireStrict rejects unknown keys.
func (MCPConfig) WireStrict() {}

// ValidateWire rejects duplicate servers, which would shadow each other's tools.
func (m *MCPConfig) ValidateWire(c *wire.Checker) {
	seen := map[string]int{}
	for i, s := range m.StdioServers {
		name := strings.TrimSpace(s.Name)
		if j, dup := seen[name]; dup && name != "" {
			c.ValueError(fmt.Sprintf("duplicate stdio server name %q (also at index %d)", name, j), "stdio_servers", i, "name")
		}
		seen[name] = i
	}
	dupURLs := func(field string, urls []string) {
		seen := map[string]int{}
		for i, u := range urls {
			u = strings.TrimSpace(u)
			if j, dup := seen[u]; dup && u != "" {
				c.ValueError(fmt.Sprintf("duplicate server URL %q (also at index %d)", u, j), field, i, "url")
			}
			seen[u] = i
		}
	}
	var sse, shttp []string
	for _, s := range m.SSEServers {
		sse = append(sse, s.URL)
	}
	for _, s := range m.SHTTPServers {
		shttp = append(shttp, s.URL)
	}
	dupURLs("sse_servers", sse)
	dupURLs("shttp_servers", shttp)
}

// MCPSSEServer is an SSE tool server.
type MCPSSEServer struct {
	URL    string  `json:"url" wire:"required"`
	APIKey *string `json:"api_key" wire:"secret"`
}

type plainSSE MCPSSEServer

// DecodeWire accepts a plain URL string as well as an object.
func (s *MCPSSEServer) DecodeWire(v any, d *wire.Decoder) {
	if str, ok := v.(string); ok {
		s.URL = str
		return
	}
	d.Decode(v, (*plainSSE)(s))
}

// WireSchema documents the string-or-object union.
func (MCPSSEServer) WireSchema() map[string]any { return serverSchema(false) }

// ValidateWire checks the URL.
func (s *MCPSSEServer) ValidateWire(c *wire.Checker) {
	s.URL = strings.TrimSpace(s.URL)
	if msg := checkServerURL(s.URL); msg != "" {
		c.ValueError(msg, "url")
	}
}

// MCPSHTTPServer is a streamable-HTTP tool server.
type MCPSHTTPServer struct {
	URL     string  `json:"url" wire:"required"`
	APIKey  *string `json:"api_key" wire:"secret"`
	Timeout *int    `json:"timeout" doc:"Seconds, 1..3600; default 60."`
}

type plainSHTTP MCPSHTTPServer

// DecodeWire accepts a plain URL string as well as an object.
func (s *MCPSHTTPServer) DecodeWire(v any, d *wire.Decoder) {
	if str, ok := v.(string); ok {
		s.URL = str
		return
	}
	d.Decode(v, (*plainSHTTP)(s))
}

// WireSchema documents the string-or-object union.
func (MCPSHTTPServer) WireSchema() map[string]any { return serverSchema(true) }

// ValidateWire checks the URL and the timeout.
func (s *MCPSHTTPServer) ValidateWire(c *wire.Checker) {
	s.URL = strings.TrimSpace(s.URL)
	if msg := checkServerURL(s.URL); msg != "" {
		c.ValueError(msg, "url")
	}
	if s.Timeout != nil {
		switch {
		case *s.Timeout <= 0:
			c.ValueError("Timeout must be positive", "timeout")
		case *s.Timeout > 3600:
			c.ValueError("Timeout cannot exceed 3600 seconds", "timeout")
		}
	}
}

func serverSchema(timeout bool) map[string]any {
	props := map[string]any{
		"url":     map[string]any{"type": "string"},
		"api_key": map[string]any{"type": []any{"string", "null"}, "writeOnly": true, "format": "password"},
	}
	if timeout {
		props["timeout"] = map[string]any{"type": []any{"integer", "null"}, "minimum": 1, "maximum": 3600}
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "description": "The server URL."},
		map[string]any{"type": "object", "properties": props, "required": []any{"url"}},
	}}
}

// checkServerURL applies OpenHands' URL rules and returns the problem, or "".
func checkServerURL(raw string) string {
	if raw == "" {
		return "URL cannot be empty"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "URL must include a scheme (http:// or https://)"
	}
	if u.Host == "" {
		return "URL must include a valid domain/host"
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ws", "wss":
		return ""
	}
	return "URL scheme must be http, https, ws, or wss"
}

// MCPStdioServer is a tool server started as a process inside the sandbox.
type MCPStdioServer struct {
	Name    string            `json:"name" wire:"required"`
	Command string            `json:"command" wire:"required"`
	Args    StdioArgs         `json:"args"`
	Env     map[string]string `json:"env" wire:"secret" doc:"Environment variables of the server's process; their values are secrets, shown masked."`
}

var (
	stdioName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

type plainStdio struct {
	Name    string    `json:"name" wire:"required"`
	Command string    `json:"command" wire:"required"`
	Args    StdioArgs `json:"args"`
	Env     any       `json:"env"`
}

// DecodeWire accepts env as an object or as a "K=V,K2=V2" string, as OpenHands does.
func (s *MCPStdioServer) DecodeWire(v any, d *wire.Decoder) {
	var p plainStdio
	d.Decode(v, &p)
	s.Name, s.Command, s.Args = p.Name, p.Command, p.Args
	switch env := p.Env.(type) {
	case nil:
	case string:
		var bad []string
		s.Env, bad = settings.ParseEnv(env)
		for _, pair := range bad {
			d.Problem("value_error", fmt.Sprintf("Value error, Environment variable %q must be in KEY=VALUE format", pair), "env")
		}
	case map[string]any:
		s.Env = map[string]string{}
		for k, val := range env {
			str, ok := val.(string)
			if !ok {
				d.Problem("string_type", "Input should be a valid string", "env", k)
				continue
			}
			s.Env[k] = str
		}
	default:
		d.Problem("dict_type", "Input should be a valid dictionary", "env")
	}
}

// ValidateWire applies OpenHands' rules for names, commands and environment names.
func (s *MCPStdioServer) ValidateWire(c *wire.Checker) {
	s.Name = strings.TrimSpace(s.Name)
	s.Command = strings.TrimSpace(s.Command)
	switch {
	case s.Name == "":
		c.ValueError("Server name cannot be empty", "name")
	case !stdioName.MatchString(s.Name):
		c.ValueError("Server name can only contain letters, numbers, hyphens, and underscores", "name")
	}
	switch {
	case s.Command == "":
		c.ValueError("Command cannot be empty", "command")
	case strings.ContainsAny(s.Command, " \t"):
		c.ValueError("Command should be a single executable without spaces (use args for arguments)", "command")
	}
	for k := range s.Env {
		if !envName.MatchString(k) {
			c.ValueError(fmt.Sprintf("Invalid environment variable name '%s'. Must start with a letter or underscore and contain only alphanumeric characters and underscores", k), "env")
		}
	}
}

// StdioArgs is a list of arguments, also accepted as one shell-style string.
type StdioArgs []string

// DecodeWire accepts a list of strings or one string split like a shell would.
func (a *StdioArgs) DecodeWire(v any, d *wire.Decoder) {
	if s, ok := v.(string); ok {
		args, err := settings.SplitArgs(s)
		if err != nil {
			d.Problem("value_error", "Value error, Invalid argument format: "+err.Error())
			return
		}
		*a = args
		return
	}
	var list []string
	d.Decode(v, &list)
	*a = list
}

// WireSchema documents the list-or-string union.
func (StdioArgs) WireSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		map[string]any{"type": "string", "description": "Arguments split like a shell would."},
		map[string]any{"type": "null"},
	}}
}
