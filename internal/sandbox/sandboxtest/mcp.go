package sandboxtest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// testMCP: a stdio MCP server is a process of the sandbox, whose tools answer through the
// runtime, and it is gone once the sandbox is destroyed.
func (s *suite) testMCP(t *testing.T) {
	if s.opts.Binary != "" {
		t.Skip("the stdio MCP test server is the test binary, and this backend runs another agentd")
	}
	bx := s.start(t, s.newBackend(t), s.spec())
	// The runtime is the test binary, so the server it starts from its own executable is
	// the test server; the marker names it on the process list.
	marker := "mcp-marker-" + NewID()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	st, err := bx.client.ConfigureMCP(ctx, "conv", runtime.MCPConfigureRequest{Servers: []mcp.Server{{
		Name: "local", Transport: mcp.Stdio, Command: "/proc/self/exe", Args: []string{marker},
		Env: map[string]string{mcptest.ModeEnv: "stdio"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 1 || st.Servers[0].Error != "" || st.Servers[0].Tools == 0 {
		t.Fatalf("servers = %+v", st.Servers)
	}
	res, err := bx.client.CallMCP(ctx, "conv", "local", "echo", []byte(`{"text":"from the sandbox"}`))
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "from the sandbox" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	// The bracket keeps the pattern from matching the command lines of grep and its shell.
	pattern := strings.Replace(marker, "marker", "marke[r]", 1)
	inside := run(t, bx.client, "grep -l '"+pattern+"' /proc/[0-9]*/cmdline 2>/dev/null")
	if strings.TrimSpace(inside.Output) == "" {
		t.Fatalf("the stdio server is not among the sandbox's processes")
	}
	s.destroyAndCheck(t, bx, marker)
}
