//go:build !linux

package terminal

import (
	"errors"
	"syscall"
	"time"
)

// missedChild cannot look at a process group without Linux's /proc: the first signal stands.
func missedChild(int, syscall.Signal) (bool, error) {
	return false, errors.New("no /proc to look at the process group")
}

// waitStopped does not wait: missedChild then says that it cannot look.
func waitStopped(int, time.Duration) bool { return true }
