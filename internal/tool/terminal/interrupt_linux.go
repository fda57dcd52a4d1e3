package terminal

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// missedChild reports whether a child of bash, in bash's process group, missed sig: it is
// alive and would take the signal's default action, yet the signal is not pending for it.
// Such a child was not yet running its program when the signal came. A process that handles,
// ignores or blocks sig got it or chose not to be ended by it (a REPL that catches SIGINT, a
// background job, which ignores it), and is left alone. Only children of bash count: bash
// waits for them before its prompt, so while one is there bash is in the command.
func missedChild(bash int, sig syscall.Signal) (bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	bit := uint64(1) << (sig - 1)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == bash {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile, or hidden
		}
		state, ppid, pgrp, ok := parseStat(stat)
		if !ok || ppid != bash || pgrp != bash || state == 'Z' || state == 'X' {
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

// waitStopped waits up to d for process pid to be stopped.
func waitStopped(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if state, _, _, ok := parseStat(stat); ok && (state == 'T' || state == 't') {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// parseStat reads the state, parent and process group of a /proc/<pid>/stat line. They are
// the first fields after the command name, which may hold anything but ends at the last ')'.
func parseStat(stat []byte) (state byte, ppid, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	return f[0][0], ppid, pgrp, err1 == nil && err2 == nil
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
