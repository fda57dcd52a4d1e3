package runtimeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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

// MCPChanges answers with a conversation's MCP tools if they changed since the state of
// generation since (a server said so, or the servers were configured again): changed is
// false, and nothing was listed, while they did not. Servers that are not connected are not
// tried again (see mcp.Hub.Changes). A conversation without MCP servers is a *StatusError
// with code 404.
func (c *Client) MCPChanges(ctx context.Context, conversationID string, since uint64) (st mcp.State, changed bool, err error) {
	req, err := c.NewRequest(ctx, http.MethodGet, "/api/mcp/"+url.PathEscape(conversationID), nil)
	if err != nil {
		return mcp.State{}, false, err
	}
	req.Header.Set("If-None-Match", `"`+strconv.FormatUint(since, 10)+`"`)
	resp, err := c.hc.Do(req)
	if err != nil {
		return mcp.State{}, false, fmt.Errorf("runtime mcp changes: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return mcp.State{Generation: since}, false, nil
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return mcp.State{}, false, fmt.Errorf("runtime mcp changes: decode answer: %w", err)
		}
		return st, true, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return mcp.State{}, false, fmt.Errorf("runtime mcp changes: %w", &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(snippet))})
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
