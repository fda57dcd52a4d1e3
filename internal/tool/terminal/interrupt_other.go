//go:build !linux

package terminal

import (
	"errors"
	"syscall"
)

// missedSignal cannot look at a process group without Linux's /proc: the first signal stands.
func missedSignal(int, syscall.Signal) (bool, error) {
	return false, errors.New("no /proc to look at the process group")
}
