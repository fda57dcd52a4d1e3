package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockDataDir takes an exclusive lock on the data directory so two servers (or a server and
// a key rotation) never work on the same data at once.
//
// It is a POSIX record lock (fcntl), not flock: a flock belongs to the open file, which a
// forked child shares until it execs, so a server killed while starting a sandbox could
// leave the lock held for a moment by a child that is not agentd. A record lock belongs to
// the process and dies with it.
func LockDataDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("data dir %s is in use by another agentd process", dir)
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return func() { f.Close() }, nil
}
