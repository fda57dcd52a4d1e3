package conversation

import (
	"reflect"
	"testing"

	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/tool/mcp"
)

// TestMCPServers: the stored configuration, the request's and the repo skills' merge into
// servers with unique names; the request replaces a stored server of the same name or URL,
// and a skill's server gives way to a configured one.
func TestMCPServers(t *testing.T) {
	key := "k"
	stored := settings.MCPConfig{
		StdioServers: []settings.MCPStdioServer{{Name: "fetch", Command: "old-fetch"}, {Name: "git", Command: "mcp-git"}},
		SSEServers:   []settings.MCPSSEServer{{URL: "https://tools.example.com/sse", APIKey: &key}},
	}
	requested := settings.MCPConfig{
		StdioServers: []settings.MCPStdioServer{{Name: "fetch", Command: "new-fetch"}},
		SHTTPServers: []settings.MCPSHTTPServer{{URL: "https://tools.example.com/mcp"}},
	}
	skills := []skill.Skill{
		{Name: "repo", Type: skill.TypeRepo, MCPServers: []skill.MCPServer{
			{Name: "git", Transport: skill.MCPStdio, Command: "repo-git"},                      // gives way to the user's
			{Transport: skill.MCPSHTTP, URL: "https://tools.example.com/mcp"},                  // the same URL as the request's
			{Name: "time", Transport: skill.MCPStdio, Command: "uvx", Args: []string{"t"}},     // joins
			{Name: "docs", Transport: skill.MCPSHTTP, URL: "https://docs.example.com/mcp"},     // joins, with its own name
			{Transport: skill.MCPSSE, URL: "https://tools.example.com/other", APIKey: "skill"}, // joins, named after its host
		}},
		{Name: "other", Type: skill.TypeRepo, MCPServers: []skill.MCPServer{{Name: "time", Transport: skill.MCPStdio, Command: "other-time"}}},
		{Name: "knowledge", Type: skill.TypeKnowledge, Triggers: []string{"x"}, MCPServers: []skill.MCPServer{{Name: "k", Transport: skill.MCPStdio, Command: "k"}}},
	}
	got := mcpServers(stored, requested, declaredMCPServers(skills))
	want := []mcp.Server{
		{Name: "git", Transport: mcp.Stdio, Command: "mcp-git"},
		{Name: "tools_example_com", Transport: mcp.SSE, URL: "https://tools.example.com/sse", APIKey: "k"},
		{Name: "fetch", Transport: mcp.Stdio, Command: "new-fetch"},
		{Name: "tools_example_com_2", Transport: mcp.SHTTP, URL: "https://tools.example.com/mcp"},
		{Name: "time", Transport: mcp.Stdio, Command: "uvx", Args: []string{"t"}},
		{Name: "docs", Transport: mcp.SHTTP, URL: "https://docs.example.com/mcp"},
		{Name: "tools_example_com_3", Transport: mcp.SSE, URL: "https://tools.example.com/other", APIKey: "skill"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("servers:\n got %+v\nwant %+v", got, want)
	}
}
