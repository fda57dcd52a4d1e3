package main

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// benchMemoryCurve measures the control plane's RSS while conversations run at once: the
// agents of o.curve's numbers of conversations (added in steps) each take steps of the
// think tool until they have written about o.events events, with a model that answers in
// slowModel; the figure at each step is the highest RSS seen while that many had started,
// and the last is the RSS once they all finished and a collection ran (as the runtime's
// periodic one would).
func benchMemoryCurve(ctx context.Context, s *server, o options, progress func(string, ...any)) ([]row, []string, error) {
	m := benchModel()
	m.steps = max(o.events/3, 1) // each step writes its stats, its action and its observation
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	s.waitIdle()
	runtime.GC()
	base, err := readRSS()
	if err != nil {
		return nil, nil, err
	}
	stopProfile, err := s.profile(o, "memory-curve")
	if err != nil {
		return nil, nil, err
	}
	defer stopProfile()
	body := map[string]any{"sandbox_id": sb.ID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": benchMarker + " " + slowMarker}}}}
	var rows []row
	started := 0
	start := time.Now()
	for _, n := range o.curve {
		progress("memory curve: %d conversations running", n)
		for ; started < n; started++ {
			if err := s.call(ctx, "POST", "/api/v1/app-conversations", body, nil); err != nil {
				return nil, nil, err
			}
		}
		// The highest RSS over a while, sampled often: the peak of this many at once.
		peak := int64(0)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
			rss, err := readRSS()
			if err != nil {
				return nil, nil, err
			}
			peak = max(peak, rss)
		}
		rows = append(rows, row{figure: fmt.Sprintf("control-plane RSS while %d conversations run at once (each writing ~%d events)", n, o.events),
			agentd: float64(peak), primitive: float64(base), unit: unitSize, baseline: "the same server idle before"})
	}
	progress("memory curve: waiting for %d conversations to finish", started)
	for !s.idle() {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	// As the runtime's periodic collection would, then the time its scavenger takes to
	// return what was freed: until the RSS has not fallen by 1 MiB in 5 s (at most 60 s).
	runtime.GC()
	after, err := readRSS()
	if err != nil {
		return nil, nil, err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(5 * time.Second)
		rss, err := readRSS()
		if err != nil {
			return nil, nil, err
		}
		if after-rss < 1<<20 {
			after = min(after, rss)
			break
		}
		after = rss
	}
	rows = append(rows, row{figure: fmt.Sprintf("control-plane RSS after those %d conversations finished", started),
		agentd: float64(after), primitive: float64(base), unit: unitSize, baseline: "the same server idle before"})
	notes := []string{fmt.Sprintf("memory curve: %d conversations of %d think steps each (a model answering in %v), all finished %.1f s after the first started; the server, its clients and the model run in one process, whose RSS this is; its soft memory limit is the configuration's (--memory-limit).",
		started, m.steps, slowModel, took.Seconds())}
	return rows, notes, nil
}
