//go:build !agentd_runtime_only

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/bwrap"
	"github.com/agentd/agentd/internal/sandbox/docker"
	"github.com/agentd/agentd/internal/sandbox/kubernetes"
	"github.com/agentd/agentd/internal/sandbox/process"
)

// runtimeDir is where in the data directory the runtime build is installed.
const runtimeDir = "bin"

// probeTimeout bounds the check that bubblewrap works here. A broken bwrap fails at once; the
// bound is for a machine so busy that a sandbox running true takes seconds (seen at ten with
// two cores saturated), which should start the server late rather than not at all. A var for
// the test of a probe out of time.
var probeTimeout = time.Minute

// openBackend picks the sandbox backend, whose sandboxes run the executable exe (see
// runtimeBinary). It is the only place that names concrete backends. auto is bwrap where
// bubblewrap and cgroups work, else process with a warning in the log and in every spec's
// warnings; a bwrap probe that runs out of time is an error, not a reason for process.
func openBackend(cfg config.Config, exe string, log *slog.Logger) (sandbox.Backend, error) {
	name := cfg.SandboxBackend
	switch name {
	case "docker":
		log.Info("sandbox backend: docker", "docker_host", cfg.DockerHost)
		return docker.New(docker.Options{Host: cfg.DockerHost, Root: filepath.Join(cfg.DataDir, "sandboxes", "docker"), Binary: exe, UID: cfg.SandboxUID, Logger: log})
	case "bwrap":
		b, err := openBwrap(cfg, exe, log)
		if err != nil {
			return nil, fmt.Errorf("sandbox backend bwrap: %w", err)
		}
		return b, nil
	case "auto":
		b, err := openBwrap(cfg, exe, log)
		if err == nil {
			return b, nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// A probe out of time says nothing of whether bwrap works here, and not knowing is
			// no reason to run sandboxes unconfined.
			return nil, fmt.Errorf("sandbox backend auto: %w; start the server again when the machine is less busy, or choose the backend (--sandbox-backend)", err)
		}
		why := "bubblewrap does not work on this machine; the server log says why"
		if errors.Is(err, exec.ErrNotFound) {
			why = "bubblewrap is not installed"
		}
		log.Warn("sandbox backend: process, because the bwrap backend cannot run here", "err", err)
		log.Warn("sandbox backend: process; " + process.Warning)
		p, err := openProcess(cfg, exe, log)
		if err != nil {
			return nil, err
		}
		return fallback{Backend: p, why: why}, nil
	case "process":
		log.Warn("sandbox backend: process; " + process.Warning)
		return openProcess(cfg, exe, log)
	case "kubernetes":
		b, err := openKubernetes(cfg, log)
		if err != nil {
			return nil, fmt.Errorf("sandbox backend kubernetes: %w", err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("sandbox backend %q is not available in this build; use auto, process, bwrap, docker or kubernetes", name)
	}
}

// runtimeBinary is the executable sandboxes run as `agentd runtime`: the runtime-only build
// packed into this binary, installed into the data directory's runtimeDir, or else this
// binary itself.
func runtimeBinary(cfg config.Config, log *slog.Logger) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the agentd binary: %w", err)
	}
	bin, err := runtime.InstallBinary(exe, filepath.Join(cfg.DataDir, runtimeDir))
	switch {
	case errors.Is(err, runtime.ErrNoPackedRuntime):
		log.Info("sandboxes run this agentd binary: it carries no runtime-only build (make build packs one, which starts faster and takes less memory)")
		return exe, nil
	case err != nil:
		return "", err
	}
	log.Info("sandboxes run the runtime-only build", "path", bin)
	return bin, nil
}

func openProcess(cfg config.Config, exe string, log *slog.Logger) (*process.Backend, error) {
	return process.New(process.Options{Root: filepath.Join(cfg.DataDir, "sandboxes", "process"), Binary: exe, Logger: log})
}

// openBwrap opens the bwrap backend and checks, by starting a throwaway sandbox, that it
// works here.
func openBwrap(cfg config.Config, exe string, log *slog.Logger) (*bwrap.Backend, error) {
	b, err := bwrap.New(bwrap.Options{Root: filepath.Join(cfg.DataDir, "sandboxes", "bwrap"), Binary: exe, UID: cfg.SandboxUID, Logger: log})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if err := b.Probe(ctx); err != nil {
		b.Close()
		return nil, err
	}
	log.Info("sandbox backend: bwrap", "cgroups", b.Cgroups().String(), "cgroup_parent", b.CgroupParent())
	return b, nil
}

// kubernetesCheckTimeout bounds the start-up check of the kubernetes backend: the API server
// may be slow to answer a dozen access reviews.
const kubernetesCheckTimeout = time.Minute

// openKubernetes opens the kubernetes backend on the cluster of --kubeconfig, or of the pod
// agentd runs in when none is given, and checks that its namespace exists and that agentd may
// do there what it needs; it refuses otherwise, saying what is missing. Reach auto is the pod
// IP in a cluster and port forwarding from outside (a kubeconfig).
func openKubernetes(cfg config.Config, log *slog.Logger) (*kubernetes.Backend, error) {
	var (
		rc    *rest.Config
		err   error
		reach = cfg.KubernetesReach
	)
	if cfg.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if reach == "auto" {
			reach = kubernetes.ReachPortForward
		}
	} else {
		rc, err = rest.InClusterConfig()
		if reach == "auto" {
			reach = kubernetes.ReachIP
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster's configuration (--kubeconfig, or in a pod its service account): %w", err)
	}
	b, err := kubernetes.New(kubernetes.Options{
		Config:       rc,
		Namespace:    cfg.KubernetesNamespace,
		Installation: cfg.KubernetesInstallation,
		RuntimeImage: cfg.KubernetesRuntimeImage,
		UID:          cfg.SandboxUID,
		Reach:        reach,
		Deny:         cfg.KubernetesDeny,
		StorageClass: cfg.KubernetesStorageClass,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubernetesCheckTimeout)
	defer cancel()
	if err := b.Check(ctx); err != nil {
		return nil, err
	}
	log.Info("sandbox backend: kubernetes", "api_server", rc.Host, "namespace", cfg.KubernetesNamespace,
		"installation", cfg.KubernetesInstallation, "reach", reach)
	return b, nil
}

// fallback is the process backend standing in for bwrap under auto; its standing warning,
// shown with every spec, says why.
type fallback struct {
	*process.Backend
	why string
}

// Warning implements sandbox.Warner.
func (f fallback) Warning() string { return process.Warning + " (" + f.why + ")" }
