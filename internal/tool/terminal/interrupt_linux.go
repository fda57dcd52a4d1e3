package terminal

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// missedSignal reports whether a process of group pgid other than its leader (bash) missed
// sig: it is alive and would take the signal's default action, yet the signal is not pending
// for it. Such a process was not yet running its program when the signal came. A process
// that handles, ignores or blocks sig got it or chose not to be ended by it (a REPL that
// catches SIGINT, a background job that ignores it), and is left alone.
func missedSignal(pgid int, sig syscall.Signal) (bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	bit := uint64(1) << (sig - 1)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile, or hidden
		}
		if !inGroup(stat, pgid) {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var seen uint64
		found := 0
		for _, key := range []string{"SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:"} {
			if m, ok := statusMask(status, key); ok {
				seen |= m
				found++
			}
		}
		if found == 5 && seen&bit == 0 {
			return true, nil
		}
	}
	return false, nil
}

// inGroup reports whether a /proc/<pid>/stat line is of a live process in group pgid. The
// fields after the command name, which may hold anything, are: state, ppid, pgrp.
func inGroup(stat []byte, pgid int) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return false
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	return err == nil && pgrp == pgid
}

// statusMask reads a signal mask line ("SigCgt:\t0000000000004002") of /proc/<pid>/status.
func statusMask(status []byte, key string) (uint64, bool) {
	i := bytes.Index(status, []byte("\n"+key))
	if i < 0 {
		return 0, false
	}
	rest := status[i+1+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	m, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
	return m, err == nil
}
