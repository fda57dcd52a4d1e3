// Command mcpserver is the test MCP server of package mcptest as a program of its own,
// served over stdio: built statically (see mcptest.BuildServer), it runs in any sandbox,
// a container image without a C library included. AGENTD_MCPTEST_MODE chooses what it does
// (see mcptest.ModeEnv); unset, it serves the test tools.
package main

import (
	"os"

	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

func main() {
	mode := os.Getenv(mcptest.ModeEnv)
	if mode == "" {
		mode = "stdio"
	}
	mcptest.Serve(mode)
}
