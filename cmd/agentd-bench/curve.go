package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"time"
)

// benchMemoryCurve measures the control plane's RSS while conversations run at once: the
// agents of o.curve's numbers of conversations (added in steps) each take steps of the
// think tool until they have written about o.events events, with a model that answers in
// slowModel; the figure at each step is the highest RSS seen while that many had started,
// and the last is the RSS once they all finished and the server let go of what it no
// longer uses.
//
// The server is `agentd serve` in a process of its own (on dataDir, with the process
// backend), so that its RSS is the control plane's alone: the bench's clients and its
// model run in the bench's process. The baseline is the same process idle before, once its
// sandbox runs.
func benchMemoryCurve(ctx context.Context, o options, dataDir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	agentd, err := agentdExecutable(ctx, o.binary, progress)
	if err != nil {
		return nil, nil, err
	}
	m := benchModel()
	m.steps = max(o.events/3, 1) // each step writes its stats, its action and its observation
	progress("memory curve: starting agentd serve in a process of its own")
	var args []string
	if o.memoryLimit != "" {
		args = append(args, "--memory-limit", o.memoryLimit)
	}
	p, err := startServeProcess(ctx, agentd, dataDir, logw, args...)
	if p != nil {
		defer p.stop()
	}
	if err != nil {
		return nil, nil, err
	}
	sandboxID, done, err := p.startSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	base, err := p.rss()
	if err != nil {
		return nil, nil, err
	}
	body := map[string]any{"sandbox_id": sandboxID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": benchMarker + " " + slowMarker}}}}
	var rows []row
	var taskIDs []string
	baseSplit, peakSplit := p.rssSplit(), ""
	cpuBefore, err := cpuOf(p.pid)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	for i, n := range o.curve {
		progress("memory curve: %d conversations running", n)
		for len(taskIDs) < n {
			id, err := p.startConversation(ctx, body)
			if err != nil {
				return nil, nil, err
			}
			taskIDs = append(taskIDs, id)
		}
		// The highest RSS over a while, sampled often: the peak of this many at once.
		peak := int64(0)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
			rss, err := p.rss()
			if err != nil {
				return nil, nil, err
			}
			if rss > peak {
				peak, peakSplit = rss, p.rssSplit()
			}
		}
		if i == len(o.curve)-1 && o.profileDir != "" {
			// What the server holds at the largest number: its heap profile (after a
			// collection, as the runtime writes it), its allocations so far, and its
			// runtime's own account of its memory (/metrics).
			for _, name := range []string{"heap", "allocs", "goroutine"} {
				if err := p.saveProfile(ctx, o.profileDir, "memory-curve", name); err != nil {
					return nil, nil, err
				}
			}
			if err := p.saveMetrics(ctx, filepath.Join(o.profileDir, "memory-curve.metrics.txt")); err != nil {
				return nil, nil, err
			}
		}
		rows = append(rows, row{figure: fmt.Sprintf("control-plane RSS while %d conversations run at once (each writing ~%d events)", n, o.events),
			agentd: float64(peak), primitive: float64(base), unit: unitSize, baseline: "the same server idle before"})
	}
	progress("memory curve: waiting for %d conversations to finish", len(taskIDs))
	if err := p.waitConversationsEnded(ctx, taskIDs); err != nil {
		return nil, nil, err
	}
	took := time.Since(start)
	cpuAfter, err := cpuOf(p.pid)
	if err != nil {
		return nil, nil, err
	}
	after, err := p.settledRSS()
	if err != nil {
		return nil, nil, err
	}
	afterSplit := p.rssSplit() // before the profiles below, which map and touch more
	// A second burst as large, all at once: what the server keeps after it tells whether
	// what each burst leaves adds up.
	progress("memory curve: a second burst of %d conversations", len(taskIDs))
	var again []string
	for range taskIDs {
		id, err := p.startConversation(ctx, body)
		if err != nil {
			return nil, nil, err
		}
		again = append(again, id)
	}
	if err := p.waitConversationsEnded(ctx, again); err != nil {
		return nil, nil, err
	}
	afterAgain, err := p.settledRSS()
	if err != nil {
		return nil, nil, err
	}
	againSplit := p.rssSplit()
	if o.profileDir != "" {
		// What the server still holds once they finished, and which goroutines remain.
		for _, name := range []string{"heap", "goroutine"} {
			if err := p.saveProfile(ctx, o.profileDir, "memory-curve-after", name); err != nil {
				return nil, nil, err
			}
		}
		if err := p.saveMetrics(ctx, filepath.Join(o.profileDir, "memory-curve-after.metrics.txt")); err != nil {
			return nil, nil, err
		}
	}
	rows = append(rows, row{figure: fmt.Sprintf("control-plane RSS after those %d conversations finished", len(taskIDs)),
		agentd: float64(after), primitive: float64(base), unit: unitSize, baseline: "the same server idle before"},
		row{figure: fmt.Sprintf("control-plane RSS after a second burst of %d conversations at once finished", len(again)),
			agentd: float64(afterAgain), primitive: float64(base), unit: unitSize, baseline: "the same server idle before"})
	limitNote := "its default soft memory limit, --memory-limit"
	if o.memoryLimit != "" {
		limitNote = "--memory-limit " + o.memoryLimit
	}
	notes := []string{fmt.Sprintf("memory curve: %d conversations of %d think steps each (a model answering in %v), all finished %.1f s after the first started, the server having used %.1f s of CPU; the server is `agentd serve` in a process of its own (process backend, %s), whose RSS this is: the bench's clients and model run in the bench's process. Its RSS as anonymous + file-backed pages (the latter mostly its executable's): idle before %s, at the peak with %d running %s, after %s, after the second burst %s. After each burst, the figure is read once the RSS has not fallen by 1 MiB in 10 s (at most a minute).",
		len(taskIDs), m.steps, slowModel, took.Seconds(), (cpuAfter - cpuBefore).Seconds(), limitNote, baseSplit, o.curve[len(o.curve)-1], peakSplit, afterSplit, againSplit)}
	return rows, notes, nil
}

// waitConversationsEnded waits until the conversations of the start tasks taskIDs are READY
// and their agents stopped: none is running (or not yet started) any more.
func (s *server) waitConversationsEnded(ctx context.Context, taskIDs []string) error {
	ids, err := s.waitTasksReady(ctx, taskIDs)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for len(ids) > 0 {
		var still []string
		for chunk := range slices.Chunk(ids, 100) {
			var convs []*struct {
				ID              string  `json:"id"`
				ExecutionStatus *string `json:"execution_status"`
			}
			if err := s.call(ctx, "GET", "/api/v1/app-conversations?"+url.Values{"ids": chunk}.Encode(), nil, &convs); err != nil {
				return err
			}
			for i, c := range convs {
				switch {
				case c == nil:
					return fmt.Errorf("conversation %s: not found", chunk[i])
				case c.ExecutionStatus == nil || *c.ExecutionStatus == "running" || *c.ExecutionStatus == "idle":
					still = append(still, c.ID)
				case *c.ExecutionStatus != "finished":
					return fmt.Errorf("conversation %s ended %s", c.ID, *c.ExecutionStatus)
				}
			}
		}
		ids = still
		if len(ids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d conversations still running after 10 minutes", len(ids))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// settledRSS waits for the server to give back what it freed, until its RSS has not fallen
// by 1 MiB in 10 s (at most a minute), and returns that RSS: the last reading, not the
// lowest, as the executable's pages the server unmaps come back in part as it runs on.
func (p *serveProcess) settledRSS() (int64, error) {
	settled, err := p.rss()
	if err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(10 * time.Second)
		rss, err := p.rss()
		if err != nil {
			return 0, err
		}
		if settled-rss < 1<<20 {
			return rss, nil
		}
		settled = rss
	}
	return settled, nil
}
