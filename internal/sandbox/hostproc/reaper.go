package hostproc

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// Reaper waits for the processes a sandbox backend started so they do not linger as zombies.
// It waits on a pidfd through the runtime's poller rather than in a blocking wait(2), so Close
// can stop every waiting goroutine at once while the processes themselves keep running.
//
// Watch and Close may be called concurrently; Watch after Close does nothing.
type Reaper struct {
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
	fds    map[*os.File]struct{}
	wg     sync.WaitGroup
}

// NewReaper returns a Reaper that logs to log the processes it cannot watch or reap.
func NewReaper(log *slog.Logger) *Reaper {
	return &Reaper{log: log, fds: map[*os.File]struct{}{}}
}

// Watch reaps cmd, which must have been started, when it exits. Without pidfd support (Linux
// before 5.3) the process is left to whoever inherits it, or to the backend's Destroy.
func (r *Reaper) Watch(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		r.log.Warn("cannot watch sandbox process; it will not be reaped", "pid", pid, "err", err)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		r.log.Warn("cannot watch sandbox process; it will not be reaped", "pid", pid, "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		f.Close()
		return
	}
	r.fds[f] = struct{}{}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// A pidfd becomes readable when its process exits; Read waits for that in the poller.
		err := rc.Read(func(fd uintptr) bool { return exited(int(fd)) })
		r.mu.Lock()
		delete(r.fds, f)
		closing := r.closed
		r.mu.Unlock()
		f.Close()
		// A process that has exited is reaped even when the backend stops watching: Close
		// may have come between its exit and this goroutine's turn, and nobody else would.
		if closing && !exitedChild(pid) {
			return // the backend stopped watching a process that still runs
		}
		if err != nil && !closing {
			r.log.Warn("wait for sandbox process; it will not be reaped", "pid", pid, "err", err)
			return
		}
		if err := cmd.Wait(); err != nil && !isExit(err) {
			r.log.Debug("reap sandbox process", "pid", pid, "err", err)
		}
	}()
}

// exitedChild reports whether pid, a child of this process, has exited and awaits its reaping.
func exitedChild(pid int) bool {
	st, err := ReadStat(pid)
	return err == nil && st.Dead() && st.PPID == os.Getpid()
}

// exited reports whether the process behind pidfd fd has exited, without waiting.
func exited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// Close stops all watching and waits for the goroutines; the processes that have exited by
// then are reaped, those still running are left unreaped. Safe to call twice.
func (r *Reaper) Close() {
	r.mu.Lock()
	r.closed = true
	for f := range r.fds {
		f.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
