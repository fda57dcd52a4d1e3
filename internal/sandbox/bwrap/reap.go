package bwrap

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// reapTimeout bounds the wait for a killed first process to become a zombie.
const reapTimeout = 5 * time.Second

// reapFirst reaps the sandbox's first process (bwrap), and slirp4netns, where they are
// children of this process that have exited, once the cgroup is empty. A Backend that started
// them reaps them by itself; this is for one that was closed meanwhile (as after a restart
// within one process, in tests). A process that left the cgroup is exiting: the loop waits
// for it to be a zombie.
func reapFirst(st instanceState) {
	reap(st.PID, st.StartTime)
	reap(st.SlirpPID, st.SlirpStartTime)
}

func reap(pid int, start uint64) {
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(reapTimeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		p, err := hostproc.ReadStat(pid)
		if err != nil || p.StartTime != start || p.PPID != os.Getpid() {
			return // gone, someone else's, or not ours to reap
		}
		if p.Dead() {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}
