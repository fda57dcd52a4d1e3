package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat holds the fields of /proc/<pid>/stat this backend uses.
type procStat struct {
	PID     int
	State   byte // R, S, D, T (stopped), t (traced), Z (zombie), X (dead), ...
	PPID    int
	Session int
	// StartTime is field 22, in clock ticks since boot.
	StartTime uint64
}

func (p procStat) stopped() bool { return p.State == 'T' || p.State == 't' }
func (p procStat) dead() bool    { return p.State == 'Z' || p.State == 'X' }

// errNoProcess: no process has that pid.
var errNoProcess = errors.New("no such process")

// readStat parses /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
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
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return procStat{PID: pid, State: f[0][0], PPID: ppid, Session: sid, StartTime: start}, nil
}

// listPIDs returns the pid of every process on the machine.
func listPIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// sessionMembers returns every live (not zombie) process of session sid.
func sessionMembers(sid int) ([]procStat, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var out []procStat
	for _, pid := range pids {
		st, err := readStat(pid)
		if err != nil { // it exited meanwhile, or is not ours to read
			continue
		}
		if st.Session == sid && !st.dead() {
			out = append(out, st)
		}
	}
	return out, nil
}

// readCmdline returns the arguments of pid.
func readCmdline(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// leader returns the sandbox's runtime process if it still runs: same pid and start time,
// and not a zombie.
func leader(st instanceState) (procStat, bool, error) {
	p, err := readStat(st.PID)
	if errors.Is(err, errNoProcess) {
		return procStat{}, false, nil
	}
	if err != nil {
		return procStat{}, false, err
	}
	if p.StartTime != st.StartTime || p.dead() {
		return p, false, nil
	}
	return p, true, nil
}
