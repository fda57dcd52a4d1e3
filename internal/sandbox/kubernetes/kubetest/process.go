package kubetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is one component of the cluster, running inside the cluster's network namespace.
type process struct {
	name    string
	logPath string
	netns   string   // the network namespace's path
	args    []string // the command line, for a restart
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startProcess starts args inside the network namespace at netnsPath, its output going to
// logPath. It is nsenter, not `ip netns exec`: the latter also mounts a new /sys, which hides
// the cgroup file systems from the kubelet and containerd.
func startProcess(name, netnsPath, logPath string, args []string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p := &process{
		name:    name,
		logPath: logPath,
		netns:   netnsPath,
		args:    args,
		cmd:     exec.Command("nsenter", append([]string{"--net=" + netnsPath, "--"}, args...)...),
		exited:  make(chan struct{}),
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// Should this process die without closing the cluster (a test binary's timeout ends it
	// with a panic), the components die too; Up removes the rest on its next run.
	// Pdeathsig follows the thread that started the child, not the process, and a thread whose
	// goroutine exits while locked to it ends (Cluster.DialContext's do). So the child starts
	// from a thread of its own, held until the child has exited.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// exitError returns a description of how the process ended, or nil while it runs.
func (p *process) exitError() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); the end of its log:\n%s", p.name, p.waitErr, p.logTail(3000))
	default:
		return nil
	}
}

// stop kills the process and waits for it to end, at most timeout.
func (p *process) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) still runs %v after SIGKILL", p.name, p.cmd.Process.Pid, timeout)
	}
}

// logTail returns the last n bytes of the process's log, from a line start.
func (p *process) logTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
