package main

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// benchPause times n pause/resume cycles of one running sandbox (Service.Pause, which returns
// once the kernel reports every process of the sandbox stopped; Service.Resume, which returns
// once the runtime answers again) beside SIGSTOP and SIGCONT of one bare process, each timed
// until /proc shows the process stopped (T) or no longer stopped. Rounds interleave the two.
func benchPause(ctx context.Context, s *server, n int) ([]row, []string, error) {
	svc := s.app.Sandboxes
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}

	// The bare process dies with this one even if the run is killed (Pdeathsig).
	bare := exec.Command("sleep", "600")
	bare.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := bare.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the bare process: %w", err)
	}
	defer func() {
		_ = bare.Process.Kill()
		_ = bare.Wait()
	}()
	pid := bare.Process.Pid

	var pauses, resumes, stops, conts []time.Duration
	for i := range warmups + n {
		t0 := time.Now()
		if err := svc.Pause(ctx, s.ownerID, sb.ID); err != nil {
			return nil, nil, err
		}
		pause := time.Since(t0)
		t0 = time.Now()
		if err := svc.Resume(ctx, s.ownerID, sb.ID); err != nil {
			return nil, nil, err
		}
		resume := time.Since(t0)

		stop, err := signalUntil(ctx, pid, syscall.SIGSTOP, true)
		if err != nil {
			return nil, nil, err
		}
		cont, err := signalUntil(ctx, pid, syscall.SIGCONT, false)
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			pauses, resumes = append(pauses, pause), append(resumes, resume)
			stops, conts = append(stops, stop), append(conts, cont)
		}
	}
	const stopBase, contBase = "SIGSTOP one process until /proc shows T", "SIGCONT until /proc no longer shows T"
	return []row{
		timeRow("pause (every process stopped), p50", 50, pauses, stops, stopBase),
		timeRow("pause, p99", 99, pauses, stops, stopBase),
		timeRow("resume (runtime answers again), p50", 50, resumes, conts, contBase),
		timeRow("resume, p99", 99, resumes, conts, contBase),
	}, []string{fmt.Sprintf("pause and resume find a sandbox's processes by scanning every process of the machine (%d now).", countProcesses())}, nil
}

// signalUntil sends sig to pid and polls /proc without pause until the process is stopped
// (or, with stopped false, no longer stopped); it returns the time that took.
func signalUntil(ctx context.Context, pid int, sig syscall.Signal, stopped bool) (time.Duration, error) {
	t0 := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		return 0, fmt.Errorf("signal %d: %w", pid, err)
	}
	for {
		st, err := processState(pid)
		if err != nil {
			return 0, err
		}
		if (st == 'T') == stopped {
			return time.Since(t0), nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}
