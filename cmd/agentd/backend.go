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

// processWarning is shown wherever the process backend is in use.
const processWarning = "the process backend does not isolate sandboxes: their commands run as the agentd user with full access to the host"

// openBackend picks the sandbox backend. It is the only place that names concrete backends.
func openBackend(cfg config.Config, log *slog.Logger) (sandbox.Backend, func(sandbox.Spec) []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find the agentd binary: %w", err)
	}
	name := cfg.SandboxBackend
	switch name {
	case "auto":
		name = "process"
		log.Warn("sandbox backend: using process; " + processWarning)
	case "process":
		log.Warn(processWarning)
	default:
		return nil, nil, fmt.Errorf("sandbox backend %q is not available in this build; use process", name)
	}
	b, err := process.New(process.Options{Root: filepath.Join(cfg.DataDir, "sandboxes", "process"), Binary: exe, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	warn := func(s sandbox.Spec) []string {
		w := []string{processWarning}
		if err := b.CheckSpec(s); err != nil {
			w = append(w, err.Error()+": sandboxes of this spec cannot start")
		}
		return w
	}
	return b, warn, nil
}
