//go:build !agentd_runtime_only

package main

import (
	"context"
	"io"
)

// serverCommand returns the command of the full build that runs the control plane, or nil
// for another name.
func serverCommand(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch name {
	case "serve":
		return serve
	case "rotate-key":
		return func(ctx context.Context, args []string, stdout, _ io.Writer) error {
			return rotateKey(ctx, args, stdout)
		}
	}
	return nil
}
