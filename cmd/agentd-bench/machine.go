package main

import (
	"os"
	"runtime"
	"strings"
	"time"
)

// machine is where the run happens, for the report's header.
type machine struct {
	date      time.Time
	goVersion string
	platform  string
	maxProcs  int
	cpus      int
	cpuModel  string
	kernel    string
	// loadAvg is the 1, 5 and 15 minute load average when the run began: other work on the
	// machine skews the figures (less so the ratios, whose halves run side by side).
	loadAvg string
}

func describeMachine() machine {
	m := machine{
		date:      time.Now(),
		goVersion: runtime.Version(),
		platform:  runtime.GOOS + "/" + runtime.GOARCH,
		maxProcs:  runtime.GOMAXPROCS(0),
		cpus:      runtime.NumCPU(),
		cpuModel:  "unknown",
		kernel:    "unknown",
		loadAvg:   "unknown",
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			m.loadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}
