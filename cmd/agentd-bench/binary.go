package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentd/agentd/internal/runtime"
)

// agentdBinary returns the absolute path of the binary the sandboxes run, as `agentd serve`
// picks it: the runtime-only build packed into the agentd binary, installed into tmp, or the
// agentd binary itself when it carries none. The agentd binary is the one given, else
// bin/agentd of the module, built by `make build` when missing.
func agentdBinary(ctx context.Context, given, tmp string, progress func(string, ...any)) (string, error) {
	agentd, err := agentdExecutable(ctx, given, progress)
	if err != nil {
		return "", err
	}
	bin, err := runtime.InstallBinary(agentd, filepath.Join(tmp, "bin"))
	if errors.Is(err, runtime.ErrNoPackedRuntime) {
		progress("%s carries no runtime-only build; sandboxes run it whole", agentd)
		return agentd, nil
	}
	return bin, err
}

func agentdExecutable(ctx context.Context, given string, progress func(string, ...any)) (string, error) {
	if given != "" {
		return executable(given)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "bin", "agentd")
	if path, err := executable(path); err == nil {
		return path, nil
	}
	progress("bin/agentd is missing; running make build")
	cmd := exec.CommandContext(ctx, "make", "build")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("make build: %w", err)
	}
	return executable(path)
}

// executable returns path made absolute if it is an executable file.
func executable(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("agentd binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("agentd binary %s is not an executable file", abs)
	}
	return abs, nil
}

// moduleRoot finds the directory of go.mod, from the working directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the agentd module or pass -agentd")
		}
		dir = parent
	}
}
