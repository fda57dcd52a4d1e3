//go:build agentd_runtime_only

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/podinit"
)

// The runtime-only build, which sandboxes run, has no control plane and no client. It leaves
// out the server and everything only the server or the CLI needs (the store, the LLM and
// Docker clients, the command-line library), whose package initialisation alone would slow
// every sandbox's start.

const usage = `agentd runs software-agent conversations inside sandboxes. This is its runtime-only
build, which sandboxes run.

Usage:
  agentd runtime [flags]     start the in-sandbox tool router (started by agentd itself)
  agentd version             print the version
`

func commandLine(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "runtime":
		if err := runtime.Main(ctx, args[1:], os.Getenv, stderr); err != nil {
			fmt.Fprintln(stderr, "agentd:", err)
			return 1
		}
		return 0
	case "sandbox-init":
		// Not in the usage: the kubernetes backend's init container runs it.
		if err := podinit.Main(args[1:], os.Getenv, stderr); err != nil {
			fmt.Fprintln(stderr, "agentd:", err)
			return 1
		}
		return 0
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "agentd", version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "rotate-key", "login", "conversations", "sandboxes", "specs", "events", "keys", "users", "settings", "webhooks", "completion":
		fmt.Fprintf(stderr, "agentd: %s is not in this build, the runtime-only one that sandboxes run; use the agentd binary\n", args[0])
		return 2
	}
	fmt.Fprintf(stderr, "agentd: unknown command %q\n\n%s", args[0], usage)
	return 2
}
