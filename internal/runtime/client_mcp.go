package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentd/agentd/internal/tool/mcp"
)

// ConfigureMCP gives a conversation its MCP servers in the sandbox and answers with their
// tools; a server that could not be started or reached is in the answer with its reason.
// ctx should allow for the connect timeout of req.
func (c *Client) ConfigureMCP(ctx context.Context, conversationID string, req MCPConfigureRequest) (mcp.State, error) {
	var st mcp.State
	if err := c.call(ctx, http.MethodPut, "/api/mcp/"+url.PathEscape(conversationID), req, &st); err != nil {
		return mcp.State{}, fmt.Errorf("runtime configure mcp: %w", err)
	}
	return st, nil
}

// MCPState answers with a conversation's MCP tools, listed again where a server said they
// changed. A conversation without MCP servers is a *StatusError with code 404.
func (c *Client) MCPState(ctx context.Context, conversationID string) (mcp.State, error) {
	var st mcp.State
	if err := c.call(ctx, http.MethodGet, "/api/mcp/"+url.PathEscape(conversationID), nil, &st); err != nil {
		return mcp.State{}, fmt.Errorf("runtime mcp state: %w", err)
	}
	return st, nil
}

// CallMCP calls a tool of one of the conversation's MCP servers. A call that fails or runs
// out of time is a result with IsError set.
func (c *Client) CallMCP(ctx context.Context, conversationID, server, tool string, args json.RawMessage) (mcp.CallResult, error) {
	if len(bytes.TrimSpace(args)) > 0 && !json.Valid(args) {
		// Not JSON at all: the model's mistake, which cannot even be sent on.
		return mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text", Text: "The arguments of " + tool + " are not valid JSON."}}}, nil
	}
	var res mcp.CallResult
	req := MCPCallRequest{Server: server, Tool: tool, Arguments: args}
	if err := c.call(ctx, http.MethodPost, "/api/mcp/"+url.PathEscape(conversationID)+"/call", req, &res); err != nil {
		return mcp.CallResult{}, fmt.Errorf("runtime mcp call %s/%s: %w", server, tool, err)
	}
	return res, nil
}
