package wire

import (
	"encoding/json"
	"strings"
	"time"
)

// Test types modelled on the OpenHands conversation API.

type Provider string

func (Provider) EnumValues() []string { return []string{"github", "gitlab", "bitbucket"} }

type Mode string

func (Mode) EnumValues() []string { return []string{"fast", "slow"} }

type Only string

func (Only) EnumValues() []string { return []string{"one"} }

// MCPServer accepts either a bare URL string or {url, api_key}.
type MCPServer struct {
	URL    string `json:"url" wire:"required,minlen=1" doc:"Server URL"`
	APIKey string `json:"api_key,omitempty" wire:"secret"`
}

func (m *MCPServer) DecodeWire(v any, d *Decoder) {
	if s, ok := v.(string); ok {
		m.URL = s
		return
	}
	d.Decode(v, m) // decodes the object form with the default rules
}

func (MCPServer) WireSchema() map[string]any {
	return map[string]any{
		"anyOf": []any{map[string]any{"type": "string"}, Ref(mcpServerObject{})},
	}
}

// mcpServerObject documents the object form of MCPServer.
type mcpServerObject MCPServer

// ShellServer shows the plain-type pattern for a union.
type ShellServer struct{ Command string }

type shellPlain struct {
	Command string `json:"command" wire:"required"`
}

func (x *ShellServer) DecodeWire(v any, d *Decoder) {
	if s, ok := v.(string); ok {
		x.Command = s
		return
	}
	var p shellPlain
	if d.Decode(v, &p) {
		x.Command = p.Command
	}
}

type StdioServer struct {
	Name    string            `json:"name" wire:"required"`
	Command string            `json:"command" wire:"required"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func (s *StdioServer) ValidateWire(c *Checker) {
	if strings.Contains(s.Name, " ") {
		c.ValueError("name must not contain spaces", "name")
	}
}

type MCPConfig struct {
	SSEServers   []MCPServer   `json:"sse_servers"`
	StdioServers []StdioServer `json:"stdio_servers" wire:"maxlen=2"`
	Shell        *ShellServer  `json:"shell"`
}

func (MCPConfig) WireStrict() {}

// ValidateWire runs after the nested StdioServer validators.
func (m MCPConfig) ValidateWire(c *Checker) {
	if len(m.SSEServers) == 0 && len(m.StdioServers) == 0 {
		c.ValueError("at least one server is required")
	}
}

type Base struct {
	ID      string `json:"id"`
	Version int    `json:"version" wire:"min=1"`
}

type StartRequest struct {
	Base
	InitialUserMsg *string                `json:"initial_user_msg" doc:"First message"`
	Repository     *string                `json:"repository" wire:"maxlen=20"`
	GitProvider    *Provider              `json:"git_provider"`
	SelectedBranch string                 `json:"selected_branch" wire:"default=main"`
	ImageURLs      []string               `json:"image_urls" wire:"maxlen=3"`
	ProviderTokens map[Provider]string    `json:"provider_tokens" wire:"secret"`
	MCPConfig      *MCPConfig             `json:"mcp_config"`
	Labels         map[string]StdioServer `json:"labels"`
	Metadata       json.RawMessage        `json:"metadata"`
	Extra          any                    `json:"extra"`
	CreatedAt      *time.Time             `json:"created_at"`
	MaxIterations  int                    `json:"max_iterations" wire:"min=1,max=500,default=100"`
	Temperature    float64                `json:"temperature" wire:"min=0,max=2"`
	Confirm        bool                   `json:"confirm"`
	Small          int8                   `json:"small"`
	Count          uint                   `json:"count"`
	Title          string                 `json:"title" wire:"minlen=2"`
	Nick           string                 `json:"nick" wire:"maxlen=1"`
	Mode           Mode                   `json:"mode"`
	Untagged       string
	Ignored        string `json:"-"`
}

type Login struct {
	User     string `json:"user" wire:"required,minlen=1"`
	Password string `json:"password" wire:"required,secret"`
}

func (Login) WireStrict() {}
