package process

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

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
func sessionMembers(sid int) ([]hostproc.Stat, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var out []hostproc.Stat
	for _, pid := range pids {
		st, err := hostproc.ReadStat(pid)
		if err != nil { // it exited meanwhile, or is not ours to read
			continue
		}
		if st.Session == sid && !st.Dead() {
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
func leader(st instanceState) (hostproc.Stat, bool, error) {
	p, err := hostproc.ReadStat(st.PID)
	if errors.Is(err, hostproc.ErrNoProcess) {
		return hostproc.Stat{}, false, nil
	}
	if err != nil {
		return hostproc.Stat{}, false, err
	}
	if p.StartTime != st.StartTime || p.Dead() {
		return p, false, nil
	}
	return p, true, nil
}
