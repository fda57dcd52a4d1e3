package skill

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMCPTools(t *testing.T) {
	tests := []struct {
		name string
		head string
		want []MCPServer
	}{
		{"V0 configuration", `mcp_tools:
  stdio_servers:
    - name: fetch
      command: uvx
      args: [mcp-server-fetch]
      env: {LOG_LEVEL: debug}
  sse_servers:
    - https://tools.example.com/sse
  shttp_servers:
    - url: https://mcp.example.com/mcp
      api_key: k
      timeout: 30`, []MCPServer{
			{Name: "fetch", Transport: MCPStdio, Command: "uvx", Args: []string{"mcp-server-fetch"}, Env: map[string]string{"LOG_LEVEL": "debug"}},
			{Transport: MCPSSE, URL: "https://tools.example.com/sse"},
			{Transport: MCPSHTTP, URL: "https://mcp.example.com/mcp", APIKey: "k", TimeoutSeconds: 30},
		}},
		{"mcpServers, by name", `mcp_tools:
  mcpServers:
    time: {command: uvx, args: [mcp-server-time]}
    docs: {url: "https://docs.example.com/mcp"}
    events: {url: "https://events.example.com/sse"}
    legacy: {url: "https://legacy.example.com/x", transport: sse}`, []MCPServer{
			{Name: "docs", Transport: MCPSHTTP, URL: "https://docs.example.com/mcp"},
			{Name: "events", Transport: MCPSSE, URL: "https://events.example.com/sse"},
			{Name: "legacy", Transport: MCPSSE, URL: "https://legacy.example.com/x"},
			{Name: "time", Transport: MCPStdio, Command: "uvx", Args: []string{"mcp-server-time"}},
		}},
		{"a bare map of servers", `mcp_tools:
  git: {command: mcp-server-git, type: stdio}`, []MCPServer{
			{Name: "git", Transport: MCPStdio, Command: "mcp-server-git"},
		}},
		{"empty", "mcp_tools:", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte("---\nname: tools\n"+tc.head+"\n---\nUse the tools."), "d", "src")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.MCPServers, tc.want) {
				t.Fatalf("servers:\n got %+v\nwant %+v", s.MCPServers, tc.want)
			}
			if s.Type != TypeRepo || s.Content != "Use the tools." {
				t.Errorf("skill = %+v", s)
			}
		})
	}
}

func TestParseMCPToolsRefuses(t *testing.T) {
	for _, tc := range []struct{ name, head, problem string }{
		{"a list", "mcp_tools: [a]", "want a mapping"},
		{"a stdio server without a name", "mcp_tools:\n  stdio_servers:\n    - command: x", "server name"},
		{"a bad name", "mcp_tools:\n  mcpServers:\n    'a b': {command: x}", "server name"},
		{"a command with spaces", "mcp_tools:\n  stdio_servers:\n    - {name: a, command: 'npx foo'}", "spaces"},
		{"a bad environment name", "mcp_tools:\n  stdio_servers:\n    - {name: a, command: x, env: {1X: v}}", "environment variable"},
		{"a URL without a host", "mcp_tools:\n  sse_servers: ['localhost:8080']", "url"},
		{"an ftp URL", "mcp_tools:\n  shttp_servers: ['ftp://example.com']", "scheme"},
		{"an unknown transport", "mcp_tools:\n  x: {url: 'https://a.example', transport: pigeon}", "unknown transport"},
		{"a timeout too long", "mcp_tools:\n  shttp_servers: [{url: 'https://a.example', timeout: 3601}]", "timeout"},
		{"args that are no list", "mcp_tools:\n  x: {command: y, args: {a: b}}", "mcp_tools"},
		{"too many", "mcp_tools:\n  mcpServers:\n" + manyServers(MaxMCPServers+1), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("---\n"+tc.head+"\n---\nBody."), "d", "src")
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Parse: %v, want an error about %q", err, tc.problem)
			}
		})
	}
}

func manyServers(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("    s" + strings.Repeat("x", i) + ": {command: c}\n")
	}
	return b.String()
}
