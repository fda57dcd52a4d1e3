package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// agentdBinary returns the absolute path of the agentd binary the sandboxes run: the one
// given, else bin/agentd of the module (as `make build` leaves it), else one built now into
// tmp the way `make build` builds it.
func agentdBinary(ctx context.Context, given, tmp string, progress func(string, ...any)) (string, error) {
	if given != "" {
		return executable(given)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if path, err := executable(filepath.Join(root, "bin", "agentd")); err == nil {
		return path, nil
	}
	path := filepath.Join(tmp, "agentd")
	progress("bin/agentd is missing; building it into %s", path)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", path, "./cmd/agentd")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build agentd: %w", err)
	}
	return path, nil
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
