package main

import (
	"context"
	"fmt"
	"github.com/agentd/agentd/internal/sandbox"
	"os/exec"
	"time"
)

// warmups are untimed rounds before each timed series, so page cache and first-use costs
// do not land in the figures.
const warmups = 3

// benchStarts times n sandbox starts, from Service.Start until WaitRunning returns (the
// runtime answered with its key), beside a fork/exec/wait of `true` and, to show what the
// runtime's own binary costs to start, of `agentd version`. Each round runs them back to
// back, so all see the same machine. Sandboxes are deleted after each round, outside the
// timed part.
func benchStarts(ctx context.Context, s *server, binary string, n int) ([]row, error) {
	var starts, trues, versions []time.Duration
	for i := range warmups + n {
		tru, err := timeRun(exec.CommandContext(ctx, "true"))
		if err != nil {
			return nil, err
		}
		version, err := timeRun(exec.CommandContext(ctx, binary, "version"))
		if err != nil {
			return nil, err
		}
		start, err := s.timeStart(ctx)
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			trues = append(trues, tru)
			versions = append(versions, version)
			starts = append(starts, start)
		}
	}
	const what, base = "sandbox start to RUNNING (process backend)", "fork/exec `true`"
	return []row{
		timeRow(what+", p50", 50, starts, trues, base),
		timeRow(what+", p99", 99, starts, trues, base),
		timeRow(what+", p50", 50, starts, versions, "fork/exec `agentd version`, the runtime's binary"),
	}, nil
}

// timeRun runs cmd to its end and returns how long that took.
func timeRun(cmd *exec.Cmd) (time.Duration, error) {
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("run %s: %w", cmd, err)
	}
	return time.Since(t0), nil
}

// timeStart starts a sandbox, waits until it runs, and deletes it; it returns the time from
// the start until it ran.
// runningSandbox starts a sandbox from the default spec and waits until it runs. done deletes
// it again; it is never nil, so callers defer it at once.
func (s *server) runningSandbox(ctx context.Context) (sb sandbox.Sandbox, done func(), err error) {
	return s.runningSandboxOf(ctx, "")
}

// runningSandboxOf is runningSandbox with a sandbox of spec specID ("" for the default).
func (s *server) runningSandboxOf(ctx context.Context, specID string) (sb sandbox.Sandbox, done func(), err error) {
	svc := s.app.Sandboxes
	sb, err = svc.Start(ctx, s.ownerID, specID)
	if err == nil {
		sb, err = svc.WaitRunning(ctx, s.ownerID, sb.ID)
	}
	done = func() {}
	if id := sb.ID; id != "" {
		done = func() { svc.Delete(context.WithoutCancel(ctx), s.ownerID, id) }
	}
	return sb, done, err
}

func (s *server) timeStart(ctx context.Context) (time.Duration, error) {
	return s.timeStartOf(ctx, "")
}

// timeStartOf is timeStart with a sandbox of spec specID ("" for the default).
func (s *server) timeStartOf(ctx context.Context, specID string) (time.Duration, error) {
	svc := s.app.Sandboxes
	t0 := time.Now()
	sb, err := svc.Start(ctx, s.ownerID, specID)
	if err == nil {
		_, err = svc.WaitRunning(ctx, s.ownerID, sb.ID)
	}
	d := time.Since(t0)
	if sb.ID != "" {
		if derr := svc.Delete(context.WithoutCancel(ctx), s.ownerID, sb.ID); derr != nil && err == nil {
			err = derr
		}
	}
	return d, err
}
