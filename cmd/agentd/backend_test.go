//go:build !agentd_runtime_only

package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

func backendConfig(t *testing.T, backend string) config.Config {
	t.Helper()
	dir := sandboxtest.ShortDir(t)
	cfg, err := config.Load([]string{"--data-dir", dir, "--sandbox-backend", backend}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testExe is the test binary, which carries no runtime build: it doubles as the runtime.
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestRuntimeBinaryWithoutPackedBuild: a binary that carries no runtime build (a plain go
// build) runs itself in its sandboxes, and says so.
func TestRuntimeBinaryWithoutPackedBuild(t *testing.T) {
	var logs bytes.Buffer
	cfg := backendConfig(t, "process")
	got, err := runtimeBinary(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || got != testExe(t) {
		t.Fatalf("runtime binary %q, %v; want the binary itself", got, err)
	}
	if !strings.Contains(logs.String(), "carries no runtime-only build") {
		t.Fatalf("the log does not say why:\n%s", logs.String())
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.DataDir, runtimeDir)); len(entries) != 0 {
		t.Fatalf("installed %v from a binary that carries nothing", entries)
	}
}

// TestAutoBackend: auto is bwrap where it works, else process with a warning, in the log and
// in the spec listing, that says why.
func TestAutoBackend(t *testing.T) {
	var logs bytes.Buffer
	b, err := openBackend(backendConfig(t, "auto"), testExe(t), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	switch b.Name() {
	case "bwrap":
		if w := sandbox.SpecWarnings(b, sandbox.Spec{}); len(w) > 0 {
			t.Fatalf("bwrap has spec warnings %q", w)
		}
	case "process":
		if !strings.Contains(logs.String(), "the bwrap backend cannot run here") {
			t.Fatalf("auto chose process without saying why:\n%s", logs.String())
		}
	default:
		t.Fatalf("auto chose %s", b.Name())
	}
}

// TestAutoBackendOutOfTime: where bwrap works, a probe that runs out of time (a machine too
// busy) stops the server with the reason, instead of running sandboxes unconfined.
func TestAutoBackendOutOfTime(t *testing.T) {
	b, err := openBackend(backendConfig(t, "auto"), testExe(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	name := b.Name()
	b.Close()
	if name != "bwrap" {
		sandboxtest.Unavailable(t, "the bwrap backend does not work here (auto chose %s)", name)
	}
	defer func(d time.Duration) { probeTimeout = d }(probeTimeout)
	probeTimeout = time.Nanosecond
	b, err = openBackend(backendConfig(t, "auto"), testExe(t), slog.New(slog.DiscardHandler))
	if err == nil {
		b.Close()
		t.Fatalf("auto with a probe out of time chose %s", b.Name())
	}
	if !strings.Contains(err.Error(), "sandbox backend auto: probe bwrap: a sandbox running true did not end in time") {
		t.Fatalf("auto with a probe out of time: %v", err)
	}
}

// TestAutoBackendWithoutBwrap: without bubblewrap, auto falls back to process and says so;
// an explicit bwrap is an error.
func TestAutoBackendWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var logs bytes.Buffer
	b, err := openBackend(backendConfig(t, "auto"), testExe(t), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := sandbox.SpecWarnings(b, sandbox.Spec{})
	if b.Name() != "process" || len(w) != 1 || !strings.Contains(w[0], process.Warning) || !strings.Contains(w[0], "bubblewrap is not installed") {
		t.Fatalf("backend %s, spec warnings %q", b.Name(), w)
	}
	if !strings.Contains(logs.String(), process.Warning) {
		t.Fatalf("no warning in the log:\n%s", logs.String())
	}

	if _, err := openBackend(backendConfig(t, "bwrap"), testExe(t), slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "sandbox backend bwrap") || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("explicit bwrap without bubblewrap: %v", err)
	}
}

// TestKubernetesBackendRefuses: the kubernetes backend needs agentd's image and a cluster it
// can reach; without either the server does not start, and says which. (Its checks of the
// namespace and the permissions run against a real cluster in the backend's own tests.)
func TestKubernetesBackendRefuses(t *testing.T) {
	dir := sandboxtest.ShortDir(t)
	_, err := config.Load([]string{"--data-dir", dir, "--sandbox-backend", "kubernetes"}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "kubernetes runtime image") {
		t.Fatalf("config without the runtime image: %v", err)
	}
	missing := filepath.Join(dir, "no-kubeconfig")
	cfg, err := config.Load([]string{"--data-dir", dir, "--sandbox-backend", "kubernetes",
		"--kubernetes-runtime-image", "agentd:test", "--kubeconfig", missing}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = openBackend(cfg, testExe(t), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "the cluster's configuration") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("open with a kubeconfig that does not exist: %v", err)
	}
}
