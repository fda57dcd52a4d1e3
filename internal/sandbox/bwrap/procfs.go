package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procStat holds the fields of /proc/<pid>/stat this backend uses.
type procStat struct {
	State     byte // R, S, T, Z (zombie), X (dead), ...
	PPID      int
	StartTime uint64 // field 22, in clock ticks since boot
}

func (p procStat) dead() bool { return p.State == 'Z' || p.State == 'X' }

// errNoProcess: no process has that pid.
var errNoProcess = errors.New("no such process")

// readStat parses /proc/<pid>/stat, counting fields from the last ')' since the command name
// may hold spaces and parentheses.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return procStat{State: f[0][0], PPID: ppid, StartTime: start}, nil
}

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
		p, err := readStat(st.PID)
		if err != nil || p.StartTime != st.StartTime || p.PPID != os.Getpid() {
			return // gone, someone else's, or not ours to reap
		}
		if p.dead() {
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
