package runtime

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A backend that cannot give the runtime a uid of its own from outside (docker, where the
// container's init and entrypoint share the container's user) starts the runtime as root and
// names the sandbox uid with --sandbox-uid. The runtime then stays root, so that the commands
// can neither signal it nor reach its descriptors or its output through /proc, while it does
// its file work as the sandbox uid and starts every command as that uid: what the agent
// leaves in the workspace, whether written by a command or by a tool in the runtime, belongs
// to the sandbox uid, and the runtime reads and writes the workspace with that uid's rights
// and no more.

// keptCaps are the capabilities the runtime keeps once it is the sandbox user's: CAP_SETUID
// and CAP_SETGID to start commands as that user, CAP_KILL to signal them. Every other one,
// CAP_SETPCAP (with which it clears the bounding set) included, is dropped.
var keptCaps = []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL}

// becomeSandboxUser turns this root process into one that works on files as uid (and gid
// uid) and returns the credential its commands are to run with: that uid and gid and no
// supplementary group. The bounding and ambient capability sets are emptied, so nothing a
// command runs (a setuid or file-capability binary, which no-new-privileges disarms anyway)
// can give it a capability back.
//
// Credentials belong to each thread in Linux, and the Go runtime has started several threads
// by now: every change is made on all of them (syscall.AllThreadsSyscall), which a binary
// built with cgo cannot do.
func becomeSandboxUser(uid int) (*syscall.Credential, error) {
	if uid <= 0 || uid >= 1<<32-1 {
		return nil, fmt.Errorf("--sandbox-uid %d is not an unprivileged uid", uid)
	}
	if euid := os.Geteuid(); euid != 0 {
		return nil, fmt.Errorf("--sandbox-uid needs the runtime to start as root, not as uid %d", euid)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil {
			return nil, fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return nil, fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	// Root's groups of the image would otherwise still open files to the runtime.
	if err := syscall.Setgroups(nil); err != nil {
		return nil, fmt.Errorf("clear the supplementary groups: %w", err)
	}
	// setfsuid and setfsgid answer with the previous id, never an error: the new one is read
	// back instead.
	if err := allThreads(unix.SYS_SETFSGID, uintptr(uid), 0, 0); err != nil {
		return nil, fmt.Errorf("set the filesystem gid: %w", err)
	}
	if err := allThreads(unix.SYS_SETFSUID, uintptr(uid), 0, 0); err != nil {
		return nil, fmt.Errorf("set the filesystem uid: %w", err)
	}
	if got, _ := unix.SetfsuidRetUid(-1); got != uid {
		return nil, fmt.Errorf("set the filesystem uid: it is %d, not %d", got, uid)
	}
	if got, _ := unix.SetfsgidRetGid(-1); got != uid {
		return nil, fmt.Errorf("set the filesystem gid: it is %d, not %d", got, uid)
	}
	if err := keepOnly(keptCaps); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}, nil
}

// keepOnly leaves caps, and nothing else, in this process's permitted and effective sets.
func keepOnly(caps []uintptr) error {
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := new([2]unix.CapUserData)
	for _, c := range caps {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
	err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(data)), 0)
	goruntime.KeepAlive(hdr)
	goruntime.KeepAlive(data)
	if err != nil {
		return fmt.Errorf("drop the runtime's other capabilities: %w", err)
	}
	return nil
}

// lastCap is the highest capability the kernel knows; the bounding set holds them all.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	return n
}

// allThreads makes a system call on every thread of the process.
func allThreads(trap, a1, a2, a3 uintptr) error {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	switch {
	case errno == syscall.ENOTSUP:
		return errors.New("this agentd was built with cgo, which cannot change the credentials of every thread: build it with CGO_ENABLED=0")
	case errno != 0:
		return errno
	}
	return nil
}
