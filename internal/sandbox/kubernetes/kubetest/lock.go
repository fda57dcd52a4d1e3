package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// machineLock is held by the one running cluster of the machine. It is an flock, so the
// kernel releases it when its holder dies; the file is removed by the holder that releases
// it, and a taker checks that the file it locked is still the one at the path.
type machineLock struct {
	path string
	f    *os.File
}

func lockPath() string { return filepath.Join(os.TempDir(), "agentd-kube.lock") }

// lockMachine takes the machine's cluster lock, waiting for it as long as ctx allows.
func lockMachine(ctx context.Context) (*machineLock, error) {
	path := lockPath()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		l, err := tryLock(path)
		if err != nil || l != nil {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the cluster of another test process to end (%s): %w", path, context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

// tryLock returns the lock, or nil if another process holds it.
func tryLock(path string) (*machineLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, nil
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The holder before may have removed the file between our open and our lock: then what
	// we locked is no longer the lock, and the next try opens the new file.
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close()
		return nil, nil
	}
	return &machineLock{path: path, f: f}, nil
}

// unlock removes the file, then releases the lock.
func (l *machineLock) unlock() {
	_ = os.Remove(l.path)
	_ = l.f.Close()
}
