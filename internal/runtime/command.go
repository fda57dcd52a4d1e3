package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// pipeGrace is how long a finished command's output pipe may stay open. A command that
// leaves a background process holding its stdout would otherwise never return.
const pipeGrace = 100 * time.Millisecond

// runCommand runs req (already validated, Cwd absolute) and collects its output; onOutput,
// when set, is given the output as it is kept.
//
// The command gets its own process group so a timeout or a client that goes away kills it
// with everything it started. It stays in the runtime's session: backends freeze a sandbox by
// session, so a command must not leave it.
func (s *Server) runCommand(ctx context.Context, req runtimeclient.CommandRequest, onOutput func([]byte)) (runtimeclient.CommandResult, error) {
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &cappedBuffer{limit: runtimeclient.MaxOutputBytes, onKeep: onOutput}
	cmd := s.shellCommand(runCtx, req.Command, req.Cwd, req.Env)
	cmd.Stdout = out
	cmd.Stderr = out

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runtimeclient.CommandResult{}, fmt.Errorf("start command: %w", err)
	}
	err := cmd.Wait()
	timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil

	res := runtimeclient.CommandResult{TimedOut: timedOut}
	res.Output, res.Truncated = out.result()
	switch {
	case timedOut:
		res.ExitCode = -1
	case cmd.ProcessState != nil:
		res.ExitCode = exitCode(cmd.ProcessState.Sys())
	case err != nil:
		return runtimeclient.CommandResult{}, fmt.Errorf("wait for command: %w", err)
	}
	s.log.Debug("command finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"output_bytes", len(res.Output), "duration", time.Since(start))
	return res, nil
}

// shellCommand prepares a command line to run in dir in its own process group, which is
// killed whole when ctx ends.
func (s *Server) shellCommand(ctx context.Context, line, dir string, env map[string]string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.shell, "-c", line)
	cmd.Dir = dir
	cmd.Env = s.commandEnv(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cfg.Credential}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace
	return cmd
}

// exitCode maps a wait status the way shells do: 128+n for a command ended by signal n.
func exitCode(sys any) int {
	ws, ok := sys.(syscall.WaitStatus)
	if !ok {
		return -1
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// commandEnv is the runtime's environment (without the session key) plus extra. Later
// entries win in os/exec, so extra overrides.
func (s *Server) commandEnv(extra map[string]string) []string {
	env := make([]string, 0, len(s.env)+len(extra))
	env = append(env, s.env...)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}
