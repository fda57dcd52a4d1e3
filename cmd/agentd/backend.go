package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

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

// presets are the built-in sandbox specs.
func presets(now time.Time) []sandbox.Spec {
	return []sandbox.Spec{{
		ID:          "default",
		Description: "The agentd runtime on the host's system directories, with network access.",
		Command:     []string{"agentd", "runtime"},
		InitialEnv:  map[string]string{},
		WorkingDir:  "/workspace",
		Network:     sandbox.NetworkHost,
		CreatedAt:   now,
	}}
}

// specsFromConfig returns the presets followed by the config file's specs (which may
// replace a preset of the same id).
func specsFromConfig(cfg config.Config) []sandbox.Spec {
	now := time.Unix(0, 0).UTC() // presets keep a fixed creation time across restarts
	specs := presets(now)
	for _, s := range cfg.Specs {
		spec := sandbox.Spec{
			ID: s.ID, Description: s.Description, Command: s.Command, InitialEnv: s.InitialEnv,
			WorkingDir: s.WorkingDir, Image: s.Image, Rootfs: s.Rootfs, Network: s.Network,
			Limits: sandbox.Limits{MemoryBytes: s.Limits.MemoryMB << 20, CPUs: s.Limits.CPUs,
				PIDs: s.Limits.PIDs, DiskBytes: s.Limits.DiskMB << 20},
			CreatedAt: now,
		}
		if len(spec.Command) == 0 {
			spec.Command = []string{"agentd", "runtime"}
		}
		if spec.InitialEnv == nil {
			spec.InitialEnv = map[string]string{}
		}
		if spec.WorkingDir == "" {
			spec.WorkingDir = "/workspace"
		}
		if spec.Network == "" {
			spec.Network = sandbox.NetworkHost
		}
		replaced := false
		for i := range specs {
			if specs[i].ID == spec.ID {
				specs[i], replaced = spec, true
			}
		}
		if !replaced {
			specs = append(specs, spec)
		}
	}
	return specs
}
