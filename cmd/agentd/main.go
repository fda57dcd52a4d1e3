// Command agentd runs software-agent conversations inside sandboxes. One binary plays every
// role: `agentd serve` is the control plane, `agentd runtime` the tool router that runs
// inside every sandbox, and the other commands (conversations, sandboxes, ...) are a client of
// a server's HTTP API.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return commandLine(ctx, args, stdin, stdout, stderr)
}
