package hostproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Stat holds the fields of /proc/<pid>/stat that the sandbox backends use.
type Stat struct {
	PID     int
	State   byte // R, S, D, T (stopped), t (traced), Z (zombie), X (dead), ...
	PPID    int
	Session int
	// StartTime is field 22, in clock ticks since boot. With PID it names one process: a
	// recycled pid has another start time.
	StartTime uint64
}

// Stopped reports whether the process is stopped by a signal or by a tracer.
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// Dead reports whether the process has exited (a zombie not yet reaped, or dead).
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' }

// ErrNoProcess means that no process has the pid.
var ErrNoProcess = errors.New("no such process")

// ReadStat parses /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return Stat{}, ErrNoProcess
	}
	if err != nil {
		return Stat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return Stat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+2:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Stat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return Stat{PID: pid, State: f[0][0], PPID: ppid, Session: sid, StartTime: start}, nil
}
