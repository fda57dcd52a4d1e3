package terminal

import "golang.org/x/sys/unix"

// waitExited blocks until process pid has exited, without reaping it: while it is a zombie its
// id cannot be reused, so its process group can still be signalled safely.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}
