package mcp

import (
	"fmt"
	"syscall"
	"time"
)

// Transport says how a server is reached.
type Transport string

const (
	// Stdio servers are processes started by the hub, spoken to on their stdin and stdout.
	Stdio Transport = "stdio"
	// SSE servers speak the 2024-11-05 HTTP+SSE transport.
	SSE Transport = "sse"
	// SHTTP servers speak the streamable HTTP transport.
	SHTTP Transport = "shttp"
)

// Server is one tool server of a conversation.
type Server struct {
	// Name identifies the server within its hub and prefixes its tools' names when needed.
	// The control plane gives every server one, URL servers included.
	Name      string    `json:"name"`
	Transport Transport `json:"transport"`
	// Command, Args and Env start a stdio server. The process gets Env on top of a small
	// base (PATH, HOME, USER, LANG, TERM, TMPDIR from the runtime's own environment), never
	// the rest of the runtime's environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL and APIKey reach an SSE or streamable-HTTP server; the key goes as a bearer token.
	URL    string `json:"url,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	// TimeoutSeconds bounds each call to this server's tools; 0 means the hub's default.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// Check reports what is wrong with s, if anything.
func (s Server) Check() error {
	// A server's name follows the rule for tool names, so that it can prefix its tools' names.
	if !validName(s.Name) {
		return fmt.Errorf("mcp server name %q: want 1 to 64 letters, digits, '-' or '_'", s.Name)
	}
	switch s.Transport {
	case Stdio:
		if s.Command == "" {
			return fmt.Errorf("mcp server %s: no command", s.Name)
		}
	case SSE, SHTTP:
		if s.URL == "" {
			return fmt.Errorf("mcp server %s: no url", s.Name)
		}
	default:
		return fmt.Errorf("mcp server %s: unknown transport %q", s.Name, s.Transport)
	}
	if s.TimeoutSeconds < 0 || s.TimeoutSeconds > 3600 {
		return fmt.Errorf("mcp server %s: timeout %d s is not within 1..3600", s.Name, s.TimeoutSeconds)
	}
	return nil
}

// Default time bounds, as OpenHands': 30 s to start a server and list its tools, 60 s for a
// tool call (a streamable-HTTP server's own timeout default).
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 60 * time.Second
)

// Options configure a Hub.
type Options struct {
	// Dir is where stdio servers start.
	Dir string
	// BaseEnv is the environment stdio servers start from, before a server's Env; nil means
	// none at all.
	BaseEnv []string
	// ConnectTimeout bounds starting (or reaching) a server and listing its tools;
	// CallTimeout bounds a tool call of a server that sets no timeout of its own. Zero means
	// the defaults.
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	// Credential, when set, is the user stdio servers run as: the sandbox's user, like every
	// command of the agent, when the runtime itself runs as another.
	Credential *syscall.Credential
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return o
}

// callTimeout is how long a call to s may take.
func (o Options) callTimeout(s Server) time.Duration {
	if s.TimeoutSeconds > 0 {
		return time.Duration(s.TimeoutSeconds) * time.Second
	}
	return o.CallTimeout
}

// BaseEnvNames are the variables of the runtime's environment a stdio server gets, beside its
// own: what a program needs to find its interpreter and a place to write.
var BaseEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL"}
