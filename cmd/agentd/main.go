// Command agentd runs software-agent conversations inside sandboxes. One binary plays both
// roles: `agentd serve` is the control plane, `agentd runtime` the tool router that runs
// inside every sandbox.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd/agentd/internal/runtime"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `agentd runs software-agent conversations inside sandboxes.

Usage:
  agentd serve [flags]       start the control plane (see docs/configuration.md)
  agentd runtime [flags]     start the in-sandbox tool router (started by agentd itself)
  agentd rotate-key [flags]  make a new server key and reseal every stored secret under it
                             (run while agentd serve is stopped)
  agentd version             print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "serve", "rotate-key":
		cmd := serverCommand(args[0])
		if cmd == nil {
			fmt.Fprintf(stderr, "agentd: %s is not in this build, the runtime-only one that sandboxes run; use the agentd binary\n", args[0])
			return 2
		}
		err = cmd(ctx, args[1:], stdout, stderr)
	case "runtime":
		err = runtime.Main(ctx, args[1:], os.Getenv, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "agentd", version)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "agentd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentd:", err)
		return 1
	}
	return 0
}
