package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// unit says how a figure is written and which way is better.
type unit int

const (
	unitTime  unit = iota // seconds; less is better
	unitRate              // a rate; more is better
	unitSize              // a size; less is better
	unitBytes             // a small size, in KiB; less is better
	unitCount             // a number of calls; less is better
)

func (u unit) format(v float64) string {
	switch u {
	case unitRate:
		return fmt.Sprintf("%.0f req/s", v)
	case unitSize:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case unitBytes:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	case unitCount:
		return fmt.Sprintf("%.4g calls", v)
	}
	d := time.Duration(v * float64(time.Second))
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", v*1e6)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", v*1e3)
	default:
		return fmt.Sprintf("%.1f ms", v*1e3)
	}
}

// row is one figure of agentd beside its primitive.
type row struct {
	figure    string
	agentd    float64
	primitive float64
	unit      unit
	// baseline names the primitive.
	baseline string
}

// ratio is agentd's cost in units of the primitive's: time over time, size over size, and
// for rates the primitive's rate over agentd's. Above 1 means agentd costs more.
func (r row) ratio() float64 {
	if r.unit == unitRate {
		return r.primitive / r.agentd
	}
	return r.agentd / r.primitive
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// timeRow is the row that sets the p-th percentile of agentd's times beside the primitive's.
func timeRow(figure string, p float64, agentd, primitive []time.Duration, baseline string) row {
	return row{figure: figure, agentd: seconds(percentile(agentd, p)), primitive: seconds(percentile(primitive, p)), unit: unitTime, baseline: baseline}
}

// report is the whole output: where it ran, the table, and notes on the run.
type report struct {
	machine machine
	options options
	binary  string
	rows    []row
	notes   []string
}

func (r report) print(w io.Writer) {
	m, o := r.machine, r.options
	fmt.Fprintf(w, "# agentd benchmark\n\n")
	fmt.Fprintf(w, "- date: %s\n", m.date.Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(w, "- go: %s %s, GOMAXPROCS=%d\n", m.goVersion, m.platform, m.maxProcs)
	fmt.Fprintf(w, "- cpu: %s (%d logical CPUs)\n", m.cpuModel, m.cpus)
	fmt.Fprintf(w, "- kernel: %s; load average at the start: %s\n", m.kernel, m.loadAvg)
	fmt.Fprintf(w, "- run: %d starts, %d pause/resume cycles, %d bwrap sandboxes at once, %d conversations, %d clients × %v per load, %d conversations on a repository of %d files, %d MCP calls per transport\n",
		o.starts, o.cycles, o.many, o.conversations, o.clients, o.duration, o.repoRounds, o.repoFiles, o.mcpCalls)
	fmt.Fprintf(w, "- sandboxes run: %s\n\n", r.binary)
	fmt.Fprintln(w, "| figure | agentd | primitive | ratio |")
	fmt.Fprintln(w, "|---|--:|---|--:|")
	for _, x := range r.rows {
		fmt.Fprintf(w, "| %s | %s | %s (%s) | %.1f× |\n", x.figure, x.unit.format(x.agentd),
			x.unit.format(x.primitive), x.baseline, x.ratio())
	}
	fmt.Fprintln(w)
	notes := append([]string{
		"ratio: agentd's cost in units of the primitive's (for rates, the primitive's rate over agentd's); above 1 means agentd costs more.",
	}, r.notes...)
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", strings.TrimSpace(n))
	}
}
