package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// readRSS returns the resident set size of this process (VmRSS), in bytes.
func readRSS() (int64, error) { return rssOf("self") }

// rssOf returns the resident set size (VmRSS) of process pid ("self" for this one), in bytes.
func rssOf(pid string) (int64, error) { return procKB(pid, "status", "VmRSS:") }

// pssOf returns the proportional set size of process pid, in bytes: its resident pages, each
// page shared with other processes counted as that share.
func pssOf(pid string) (int64, error) { return procKB(pid, "smaps_rollup", "Pss:") }

// procKB reads the field key, in kB, of /proc/<pid>/<file>, in bytes.
func procKB(pid, file, key string) (int64, error) {
	data, err := os.ReadFile("/proc/" + pid + "/" + file)
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read RSS: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read RSS: no %s in /proc/%s/%s", key, pid, file)
}

// processState returns the state letter of pid from /proc/<pid>/stat: R, S, T (stopped), ...
// The command name may hold spaces and parentheses, so the state is found after the last ')'.
func processState(pid int) (byte, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return data[i+2], nil
}

// cpuOf returns the CPU time (user and system) process pid has used, from /proc/<pid>/stat,
// which counts it in clock ticks (100 a second on Linux).
func cpuOf(pid string) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	n, err := ticks(f, statUTime, statSTime)
	return time.Duration(n) * 10 * time.Millisecond, err
}

// countProcesses returns how many processes the machine runs.
func countProcesses() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// countCPUs is the number of CPUs this process may use.
func countCPUs() int { return runtime.NumCPU() }
