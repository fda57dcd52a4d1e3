package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
)

// openBackend picks the sandbox backend. It is the only place that names concrete backends.
func openBackend(cfg config.Config, log *slog.Logger) (sandbox.Backend, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the agentd binary: %w", err)
	}
	name := cfg.SandboxBackend
	switch name {
	case "auto", "process":
		log.Warn("sandbox backend: process; " + process.Warning)
	default:
		return nil, fmt.Errorf("sandbox backend %q is not available in this build; use process", name)
	}
	return process.New(process.Options{Root: filepath.Join(cfg.DataDir, "sandboxes", "process"), Binary: exe, Logger: log})
}
