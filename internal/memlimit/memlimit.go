// Package memlimit keeps a process's resident memory near a soft limit. The Go runtime's own
// soft limit (debug.SetMemoryLimit, GOMEMLIMIT) counts only the memory the runtime maps: the
// heap, the goroutines' stacks and the runtime's own structures. A server's resident set also
// holds what lies outside it: the pages of its executable it has mapped in (for agentd, tens
// of MiB at a busy peak: the code run and the tables the runtime reads to walk stacks) and
// SQLite's page caches, which the C library allocates. A limit an operator sets, a
// container's or a cgroup's, counts all of it. So the governor keeps the runtime's limit at
// the resident limit less what the process holds outside the runtime's memory, measured
// again at every tick.
package memlimit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// Every is how often Run measures the process again.
const Every = 500 * time.Millisecond

// floorShare is the least share of the resident limit the runtime's limit is set to, however
// much the process holds outside it: below it the collector would run all the time and free
// nothing it could use.
const floorShare = 4

// Run keeps the process's resident memory near limit bytes until ctx is done: at every tick,
// it sets the Go runtime's soft limit to goLimit. A limit of 0 or less means none: Run
// returns at once and leaves the runtime's limit as it is (GOMEMLIMIT's, if the operator set
// it). If the process's resident set cannot be read (no /proc), the runtime's limit is limit
// itself, as GOMEMLIMIT would set it. When ctx is done, the runtime's limit is as it was
// before Run.
func Run(ctx context.Context, limit int64, every time.Duration) {
	if limit <= 0 {
		return
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(limit)
	g, err := newGauge()
	if err != nil {
		<-ctx.Done() // no /proc: the runtime's limit stays limit
		return
	}
	defer g.close()
	set := limit
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if rss, file, err := g.resident(); err == nil {
			if want := goLimit(limit, rss, file, g.goMapped()); want != set {
				set = want
				debug.SetMemoryLimit(set)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// goLimit is the runtime's soft limit that keeps a process whose resident set is rss bytes,
// file of them pages of files (its executable's), within limit, when the runtime maps
// goMapped bytes: limit less what the process holds outside the runtime's memory, rounded
// down to a MiB (so that it changes only when that part does), and never below a quarter of
// limit. What is outside is what is resident beyond the runtime's memory, and at least the
// files' pages: the runtime's memory is not all resident (memory it mapped and has not
// touched yet), which would otherwise hide them.
func goLimit(limit, rss, file, goMapped int64) int64 {
	outside := max(rss-goMapped, file, 0)
	l := (limit - outside) &^ (1<<20 - 1)
	return max(l, limit/floorShare)
}

// gauge reads the process's resident set and the runtime's memory, its file kept open and
// its buffers kept across readings.
type gauge struct {
	statm   *os.File
	buf     [128]byte
	samples []metrics.Sample
	page    int64
}

func newGauge() (*gauge, error) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil, err
	}
	return &gauge{statm: f, page: int64(os.Getpagesize()), samples: []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}}, nil
}

func (g *gauge) close() { g.statm.Close() }

// resident is the process's resident set in bytes, and the part of it that is pages of files:
// the second and third fields of /proc/self/statm (in pages).
func (g *gauge) resident() (rss, file int64, err error) {
	n, err := g.statm.ReadAt(g.buf[:], 0)
	if n == 0 {
		return 0, 0, fmt.Errorf("read /proc/self/statm: %w", err)
	}
	fields := bytes.Fields(g.buf[:n])
	if len(fields) < 3 {
		return 0, 0, fmt.Errorf("read /proc/self/statm: %q", g.buf[:n])
	}
	var pages [2]int64
	for i := range pages {
		if pages[i], err = strconv.ParseInt(string(fields[1+i]), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("read /proc/self/statm: %w", err)
		}
	}
	return pages[0] * g.page, pages[1] * g.page, nil
}

// goMapped is the memory the runtime's soft limit counts: all it maps, less what it gave back
// to the system.
func (g *gauge) goMapped() int64 {
	metrics.Read(g.samples)
	return int64(g.samples[0].Value.Uint64() - g.samples[1].Value.Uint64())
}
