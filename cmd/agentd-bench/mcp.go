package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// mcpConversation is the conversation the bench's MCP servers are configured for.
const mcpConversation = "bench-mcp"

// benchMCP times a trivial MCP tool call (echo) through the tool router: the control plane's
// call to a sandbox's runtime, whose hub calls the server (a stdio server the runtime started
// in the sandbox, and a streamable-HTTP server on loopback), beside a direct call to the same
// server from the same SDK's client, in the same run.
func benchMCP(ctx context.Context, s *server, tmp string, n int, progress func(string, ...any)) ([]row, []string, error) {
	bin := filepath.Join(tmp, "mcpserver")
	progress("building the test MCP server")
	if err := mcptest.BuildServer(ctx, bin); err != nil {
		return nil, []string{"MCP calls: not measured: " + err.Error()}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	stop := make(chan struct{})
	hs := &http.Server{Handler: mcptest.Handler("", stop), ReadHeaderTimeout: time.Minute}
	go hs.Serve(ln)
	defer func() {
		close(stop)
		hs.Close()
	}()
	url := "http://" + ln.Addr().String() + "/mcp"

	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	rt, err := s.app.Sandboxes.Client(ctx, s.ownerID, sb.ID)
	if err != nil {
		return nil, nil, err
	}
	st, err := rt.ConfigureMCP(ctx, mcpConversation, runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{
		{Name: "stdio", Transport: mcp.Stdio, Command: bin},
		{Name: "http", Transport: mcp.SHTTP, URL: url},
	}})
	if err != nil {
		return nil, nil, err
	}
	for _, srv := range st.Servers {
		if srv.Error != "" {
			return nil, nil, fmt.Errorf("mcp server %s in the sandbox: %s", srv.Name, srv.Error)
		}
	}
	args := json.RawMessage(`{"text":"ping"}`)
	viaRouter := func(server string) func() error {
		return func() error {
			res, err := rt.CallMCP(ctx, mcpConversation, server, "echo", args)
			if err == nil && (res.IsError || len(res.Content) != 1 || res.Content[0].Text != "ping") {
				err = fmt.Errorf("echo through the router answered %+v", res)
			}
			return err
		}
	}

	var rows []row
	for _, c := range []struct {
		name, server string
		transport    func() sdk.Transport
	}{
		{"stdio", "stdio", func() sdk.Transport { return &sdk.CommandTransport{Command: exec.Command(bin)} }},
		{"streamable HTTP", "http", func() sdk.Transport { return &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: 1} }},
	} {
		progress("timing %d MCP calls over %s, through the tool router and directly", n, c.name)
		sess, err := sdk.NewClient(&sdk.Implementation{Name: "agentd-bench", Version: "1"}, nil).Connect(ctx, c.transport(), nil)
		if err != nil {
			return nil, nil, fmt.Errorf("connect to the %s server directly: %w", c.name, err)
		}
		direct := func() error {
			res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			if err == nil && (res.IsError || len(res.Content) != 1) {
				err = errors.New("echo called directly answered an error")
			}
			return err
		}
		router, plain, err := timeCallPairs(viaRouter(c.server), direct, n)
		if err == nil {
			base := "the same server called directly by the go-sdk client"
			rows = append(rows,
				timeRow(fmt.Sprintf("MCP tool call through the tool router, %s, p50", c.name), 50, router, plain, base),
				timeRow(fmt.Sprintf("MCP tool call through the tool router, %s, p99", c.name), 99, router, plain, base))
		}
		sess.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	notes := []string{fmt.Sprintf("MCP calls: %d echo calls of each kind, through the router and directly in turn, after %d to warm up; the router's path is the control plane's runtime client, the sandbox's runtime (process backend) and its MCP hub, which keeps one session per server; the stdio server is the same static program both ways, the HTTP server one in this process on loopback.", n, mcpWarmUp)}
	return rows, notes, nil
}

// mcpWarmUp calls go untimed before each series.
const mcpWarmUp = 20

// timeCallPairs times n calls of a and of b, alternating, so that both meet the same load,
// after mcpWarmUp untimed calls of each.
func timeCallPairs(a, b func() error, n int) (ta, tb []time.Duration, err error) {
	for range mcpWarmUp {
		if err := errors.Join(a(), b()); err != nil {
			return nil, nil, err
		}
	}
	ta, tb = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for range n {
		da, err := timeFunc(a)
		if err != nil {
			return nil, nil, err
		}
		db, err := timeFunc(b)
		if err != nil {
			return nil, nil, err
		}
		ta, tb = append(ta, da), append(tb, db)
	}
	return ta, tb, nil
}
