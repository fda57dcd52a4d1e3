package runtimeclient

import (
	"encoding/json"

	"github.com/agentd/agentd/internal/tool/mcp"
)

// MCPConfigureRequest is the body of PUT /api/mcp/{conversation_id}.
type MCPConfigureRequest struct {
	// Servers are the conversation's MCP servers; those of an earlier request that are left
	// out are stopped, and those that are the same are kept as they are.
	Servers []mcp.Server `json:"servers"`
	// ConnectTimeoutSeconds bounds starting a server and listing its tools, and
	// CallTimeoutSeconds a tool call of a server without a timeout of its own; 0 means
	// mcp.DefaultConnectTimeout and mcp.DefaultCallTimeout.
	ConnectTimeoutSeconds float64 `json:"connect_timeout_seconds,omitempty" wire:"min=0,max=3600"`
	CallTimeoutSeconds    float64 `json:"call_timeout_seconds,omitempty" wire:"min=0,max=3600"`
}

// MCPCallRequest is the body of POST /api/mcp/{conversation_id}/call.
type MCPCallRequest struct {
	Server string `json:"server" wire:"required,minlen=1"`
	Tool   string `json:"tool" wire:"required,minlen=1"`
	// Arguments are the model's, passed on unchanged.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}
