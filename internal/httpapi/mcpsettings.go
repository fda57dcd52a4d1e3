package httpapi

import (
	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/settings"
)

// The wire and settings forms of the MCP servers have the same fields, so a server converts
// with a plain conversion, which stops compiling when either form gains a field.

// settingsMCP is the MCP configuration m describes, for the settings service; nil for nil.
func settingsMCP(m *apitypes.MCPConfig) *settings.MCPConfig {
	if m == nil {
		return nil
	}
	return &settings.MCPConfig{
		SSEServers:   convertAll(m.SSEServers, func(s apitypes.MCPSSEServer) settings.MCPSSEServer { return settings.MCPSSEServer(s) }),
		SHTTPServers: convertAll(m.SHTTPServers, func(s apitypes.MCPSHTTPServer) settings.MCPSHTTPServer { return settings.MCPSHTTPServer(s) }),
		StdioServers: convertAll(m.StdioServers, func(s apitypes.MCPStdioServer) settings.MCPStdioServer {
			return settings.MCPStdioServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env}
		}),
	}
}

// apiMCP is the wire form of m; nil for nil.
func apiMCP(m *settings.MCPConfig) *apitypes.MCPConfig {
	if m == nil {
		return nil
	}
	return &apitypes.MCPConfig{
		SSEServers:   convertAll(m.SSEServers, func(s settings.MCPSSEServer) apitypes.MCPSSEServer { return apitypes.MCPSSEServer(s) }),
		SHTTPServers: convertAll(m.SHTTPServers, func(s settings.MCPSHTTPServer) apitypes.MCPSHTTPServer { return apitypes.MCPSHTTPServer(s) }),
		StdioServers: convertAll(m.StdioServers, func(s settings.MCPStdioServer) apitypes.MCPStdioServer {
			return apitypes.MCPStdioServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env}
		}),
	}
}

// convertAll converts each element of in; a nil slice stays nil, so that a list the client
// sent as null reads back as null and an empty one as [].
func convertAll[From, To any](in []From, f func(From) To) []To {
	if in == nil {
		return nil
	}
	out := make([]To, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
