package process

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// defaultCommand starts the runtime when a spec names no command.
var defaultCommand = []string{"agentd", "runtime"}

// Start creates <Root>/<id>/ and starts the runtime in a new session there. It returns once
// the process exists; the runtime answers a moment later.
func (b *Backend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	if err := checkSpec(req.Spec); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if _, err := req.RuntimeKey(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	dir, err := b.root.Create(req.ID)
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	inst, err := b.start(dir, req)
	if err != nil {
		if rmErr := hostproc.RemoveAll(dir); rmErr != nil {
			b.log.Error("remove sandbox directory after failed start", "sandbox_id", req.ID, "err", rmErr)
		}
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	return inst, nil
}

// start makes the rest of the sandbox in dir and starts its runtime.
func (b *Backend) start(dir string, req sandbox.StartRequest) (sandbox.Instance, error) {
	ws := workspacePath(dir)
	if err := os.Mkdir(ws, 0o700); err != nil {
		return sandbox.Instance{}, fmt.Errorf("create workspace: %w", err)
	}
	logFile, err := os.OpenFile(logPath(dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("create runtime log: %w", err)
	}
	defer logFile.Close() // the child has its own copy

	argv := slices.Clone(req.Spec.Command)
	if len(argv) == 0 {
		argv = slices.Clone(defaultCommand)
	}
	if argv[0] == "agentd" {
		argv[0] = b.binary
	}
	// The key travels through a pipe (fd 3 in the child), not the environment, so no command
	// in the sandbox can read it from /proc/<runtime pid>/environ.
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("key pipe: %w", err)
	}
	defer keyR.Close()
	key, _ := req.RuntimeKey()
	_, err = keyW.WriteString(key)
	keyW.Close()
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("key pipe: %w", err)
	}
	argv = req.RuntimeArgs(append(argv, "--listen", listenArg(dir), "--workspace", ws, "--sandbox-id", req.ID, "--key-fd", "3"))

	// Not CommandContext: the sandbox must outlive the request that started it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = ws
	cmd.Env = b.env(ws, req)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.ExtraFiles = []*os.File{keyR}
	// Its own session: Pause finds the sandbox's processes by session id, and the runtime
	// survives agentd serve.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("exec runtime: %w", err)
	}
	pid := cmd.Process.Pid
	st, err := hostproc.ReadStat(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return sandbox.Instance{}, fmt.Errorf("read runtime process: %w", err)
	}
	b.reaper.Watch(cmd)
	b.log.Info("sandbox started", "sandbox_id", req.ID, "pid", pid)
	return sandbox.Instance{
		ID:            req.ID,
		Endpoint:      listenArg(dir),
		Workspace:     ws,
		HostWorkspace: ws,
		State:         instanceState{PID: pid, StartTime: st.StartTime}.encode(),
	}, nil
}

// env is the runtime's whole environment. The server's own environment is not passed on.
func (b *Backend) env(ws string, req sandbox.StartRequest) []string {
	env := []string{
		"PATH=" + b.path,
		"HOME=" + ws,
		"LANG=C.UTF-8",
		"TERM=xterm-256color",
	}
	for _, k := range slices.Sorted(maps.Keys(req.Spec.InitialEnv)) {
		env = append(env, k+"="+req.Spec.InitialEnv[k])
	}
	return env
}

// Warning implements sandbox.Warner.
func (b *Backend) Warning() string { return Warning }

// Warning is the process backend's standing warning, shown in the log and the spec listing.
// It is why the backend accepts specs with limits and the egress network: it enforces no
// limit and cuts nothing, and says so once for every spec.
const Warning = "the process backend does not isolate sandboxes: their commands run as the agentd user with full access to the host and its network, and no resource limit applies"

// CheckSpec implements sandbox.SpecChecker.
func (b *Backend) CheckSpec(spec sandbox.Spec) error { return checkSpec(spec) }

// checkSpec rejects what a plain process cannot do, naming all of it at once.
func checkSpec(spec sandbox.Spec) error {
	var missing []string
	switch spec.Network {
	case "", sandbox.NetworkEgress, sandbox.NetworkHost:
	case sandbox.NetworkNone:
		missing = append(missing, `network "none" (a process shares the host network)`)
	default:
		return fmt.Errorf("unknown network policy %q", spec.Network)
	}
	if spec.Rootfs != "" {
		missing = append(missing, "rootfs")
	}
	if spec.Image != "" {
		missing = append(missing, "image")
	}
	if len(missing) > 0 {
		return &sandbox.UnsupportedError{Backend: Name, What: missing}
	}
	return nil
}
