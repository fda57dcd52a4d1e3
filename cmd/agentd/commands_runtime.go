//go:build agentd_runtime_only

package main

import (
	"context"
	"io"
)

// serverCommand: the runtime-only build, which sandboxes run, has no control plane. It
// leaves out the server and everything only the server needs (the store, the LLM and Docker
// clients), whose package initialisation alone would slow every sandbox's start.
func serverCommand(string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return nil
}
