package bwrap

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper waits for the bwrap processes a Backend started so they do not linger as zombies.
// It waits on a pidfd through the runtime's poller rather than in a blocking wait(2), so close
// can stop every waiting goroutine at once while the sandboxes keep running.
type reaper struct {
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
	fds    map[*os.File]struct{}
	wg     sync.WaitGroup
}

func newReaper(log *slog.Logger) *reaper {
	return &reaper{log: log, fds: map[*os.File]struct{}{}}
}

// watch reaps cmd when it exits. Without pidfd support (Linux before 5.3) the process is left
// to whoever inherits it, or to Destroy.
func (r *reaper) watch(cmd *exec.Cmd) {
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
		err := rc.Read(func(fd uintptr) bool { return pidfdReady(int(fd)) })
		r.mu.Lock()
		delete(r.fds, f)
		closing := r.closed
		r.mu.Unlock()
		f.Close()
		if closing { // the backend stopped watching
			return
		}
		if err != nil {
			r.log.Warn("wait for sandbox process; it will not be reaped", "pid", pid, "err", err)
			return
		}
		if err := cmd.Wait(); err != nil && !isExit(err) {
			r.log.Debug("reap sandbox process", "pid", pid, "err", err)
		}
	}()
}

// pidfdReady reports whether the process behind pidfd fd has exited, without waiting.
func pidfdReady(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// close stops all watching and waits for the goroutines. Safe to call twice.
func (r *reaper) close() {
	r.mu.Lock()
	r.closed = true
	for f := range r.fds {
		f.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
