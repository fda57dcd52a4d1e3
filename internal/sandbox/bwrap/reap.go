package bwrap

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// reapTimeout bounds the wait for a killed first process to become a zombie.
const reapTimeout = 5 * time.Second

// reapFirst reaps the sandbox's first process (bwrap) if it is a child of this process that
// has exited, once its cgroup is empty. A Backend that started it reaps it by itself; this is
// for one that was closed meanwhile (as after a restart within one process, in tests). A
// process that left the cgroup is exiting: the loop waits for it to be a zombie.
func reapFirst(st instanceState) {
	if st.PID <= 0 {
		return
	}
	deadline := time.Now().Add(reapTimeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		p, err := hostproc.ReadStat(st.PID)
		if err != nil || p.StartTime != st.StartTime || p.PPID != os.Getpid() {
			return // gone, someone else's, or not ours to reap
		}
		if p.Dead() {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(st.PID, &ws, unix.WNOHANG, nil)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}
