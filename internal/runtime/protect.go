package runtime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// protectProcess makes this process not dumpable. The kernel then lets only a process with
// CAP_SYS_PTRACE over it (and none in a sandbox has one) read or write its memory, read its
// environment, open its descriptors through /proc/<pid>/fd or attach to it: the /proc entries
// belong to root. The flag belongs to the process's memory, so it covers every thread, those
// the Go runtime started before main included. An exec resets it, which is why the runtime
// sets it itself rather than its parent; for the same reason the commands it starts, which
// are exec'd, are dumpable as usual and can debug each other.
func protectProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the runtime not dumpable: %w", err)
	}
	return nil
}
