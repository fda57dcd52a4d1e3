package process

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper waits for the runtimes a Backend started so they do not linger as zombies. It waits
// on a pidfd through the runtime's poller rather than in a blocking wait(2), so close can stop
// every waiting goroutine at once while the runtimes themselves keep running.
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

// watch reaps cmd when it exits. Without pidfd support (Linux before 5.3) the runtime is left
// to whoever inherits it.
func (r *reaper) watch(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		r.log.Warn("cannot watch runtime process; it will not be reaped", "pid", pid, "err", err)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		r.log.Warn("cannot watch runtime process; it will not be reaped", "pid", pid, "err", err)
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
		if closing { // the backend stopped watching
			return
		}
		if err != nil {
			r.log.Warn("wait for runtime process; it will not be reaped", "pid", pid, "err", err)
			return
		}
		if err := cmd.Wait(); err != nil && !isExit(err) {
			r.log.Debug("reap runtime process", "pid", pid, "err", err)
		}
	}()
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
