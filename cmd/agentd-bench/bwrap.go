package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/bwrap"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
)

// bwrapGoal is the target for the bwrap backend: start to a sandbox that answers
// under 25 ms at the median, and within 5× a bare bwrap.
const (
	bwrapGoal      = 25 * time.Millisecond
	bwrapGoalRatio = 5
)

// benchBwrap measures the bwrap backend on a server of its own (data directory dataDir):
// start to RUNNING beside a bare `bwrap … true` with the same namespaces and mounts, pause and
// resume beside a bare freeze and thaw of a one-process cgroup, the memory of one idle
// sandbox beside a bare bwrap running sleep, and many sandboxes started at once. Where bwrap
// does not work it returns a note instead of rows.
func benchBwrap(ctx context.Context, o options, bin, dataDir string, logw io.Writer, progress func(string, ...any)) (_ []row, _ []string, err error) {
	s, b, skipped, err := startBwrapServer(ctx, o, bin, dataDir, logw)
	if s == nil {
		return nil, skipped, err
	}
	defer s.close()

	var rows []row
	var notes []string
	progress("timing %d bwrap sandbox starts", o.starts)
	r, n, err := bwrapStarts(ctx, s, b, o.starts)
	if err != nil {
		return nil, nil, err
	}
	rows, notes = append(rows, r...), append(notes, n)

	progress("timing %d bwrap pause/resume cycles", o.cycles)
	if r, err = bwrapPause(ctx, s, b, o.cycles); err != nil {
		return nil, nil, err
	}
	rows = append(rows, r...)

	progress("measuring the memory of an idle bwrap sandbox")
	mem, floor, err := bwrapMemory(ctx, s, b)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, mem)

	progress("starting %d bwrap sandboxes at once", o.many)
	r, n, err = bwrapMany(ctx, s, b, o.many, floor)
	if err != nil {
		return nil, nil, err
	}
	return append(rows, r...), append(notes, n), nil
}

// startBwrapServer starts a server of its own on the bwrap backend (data directory dataDir).
// Where bwrap does not work it returns no server and a note saying why.
func startBwrapServer(ctx context.Context, o options, bin, dataDir string, logw io.Writer) (*server, *bwrap.Backend, []string, error) {
	log := benchLogger(logw)
	b, err := bwrap.New(bwrap.Options{Root: filepath.Join(dataDir, "sandboxes", "bwrap"), Binary: bin, Logger: log})
	if err == nil {
		if err = b.Probe(ctx); err != nil {
			b.Close()
		}
	}
	if err != nil {
		return nil, nil, []string{"bwrap rows skipped: the bwrap backend does not work here: " + err.Error()}, nil
	}
	s, err := startServerWith(ctx, b, dataDir, o.clients, log, "")
	if err != nil {
		return nil, nil, nil, err
	}
	return s, b, nil, nil
}

// bwrapStarts times n starts to RUNNING of each network, egress (the default) and none, each
// round beside a bare bwrap running `true` with the same network set up.
func bwrapStarts(ctx context.Context, s *server, b *bwrap.Backend, n int) ([]row, string, error) {
	var egress, none, bareEgress, bareNone []time.Duration
	for i := range warmups + n {
		be, err := timeFunc(func() error { return b.BareRun(ctx, sandbox.NetworkEgress, "true") })
		if err != nil {
			return nil, "", err
		}
		bn, err := timeFunc(func() error { return b.BareRun(ctx, sandbox.NetworkNone, "true") })
		if err != nil {
			return nil, "", err
		}
		se, err := s.timeStart(ctx)
		if err != nil {
			return nil, "", err
		}
		sn, err := s.timeStartOf(ctx, specNoNetwork)
		if err != nil {
			return nil, "", err
		}
		if i >= warmups {
			bareEgress, bareNone = append(bareEgress, be), append(bareNone, bn)
			egress, none = append(egress, se), append(none, sn)
		}
	}
	const what = "sandbox start to RUNNING (bwrap backend, network %s)"
	const bare = "bare `bwrap … true`, same namespaces and mounts, %s"
	p50, bare50 := percentile(egress, 50), percentile(bareEgress, 50)
	verdict := "met"
	if p50 >= bwrapGoal || p50 > bwrapGoalRatio*bare50 {
		verdict = "NOT met"
	}
	note := fmt.Sprintf("bwrap start goal (p50 under %v and within %d× bare bwrap), with the default network egress: %s (p50 %v, %.1f× bare with the same network); with network none: p50 %v.",
		bwrapGoal, bwrapGoalRatio, verdict, p50.Round(10*time.Microsecond), float64(p50)/float64(bare50), percentile(none, 50).Round(10*time.Microsecond))
	return []row{
		timeRow(fmt.Sprintf(what, "egress")+", p50", 50, egress, bareEgress, fmt.Sprintf(bare, "its own network namespace with slirp4netns up")),
		timeRow(fmt.Sprintf(what, "egress")+", p99", 99, egress, bareEgress, fmt.Sprintf(bare, "its own network namespace with slirp4netns up")),
		timeRow(fmt.Sprintf(what, "none")+", p50", 50, none, bareNone, fmt.Sprintf(bare, "its own network namespace")),
		timeRow(fmt.Sprintf(what, "egress")+", p50", 50, egress, none, "the same start with network none"),
	}, note, nil
}

// timeFunc runs f and returns how long it took.
func timeFunc(f func() error) (time.Duration, error) {
	t0 := time.Now()
	if err := f(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// bwrapPause times n pause/resume cycles of one running sandbox beside a freeze (until the
// kernel reports FROZEN) and a thaw of a cgroup holding one sleeping process; and the resume
// beside its own raw steps: a thaw of the sandbox's cgroup, frozen directly, and one request
// its runtime answers (GET /api/identity on a new connection, as the service's probe asks).
// The bare freeze and thaw run while the backend holds the freezer (its first pause takes the
// hold), so they pay what the sandbox's do, not the kernel's switching the freezer on and off.
func bwrapPause(ctx context.Context, s *server, b *bwrap.Backend, n int) ([]row, error) {
	svc := s.app.Sandboxes
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, err
	}
	g, stop, err := bareGroup(ctx, b, "bench-freezer", "sleep", "600")
	if err != nil {
		return nil, err
	}
	defer stop()
	own, err := b.Group(sb.Instance)
	if err != nil {
		return nil, err
	}
	key, err := svc.SessionKey(ctx, s.ownerID, sb.ID)
	if err != nil {
		return nil, err
	}
	rawResume := func() (time.Duration, error) {
		if err := own.Freeze(ctx); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := own.Thaw(ctx); err != nil {
			return 0, err
		}
		c, err := runtimeclient.NewClient(sb.Instance.Endpoint, key)
		if err != nil {
			return 0, err
		}
		defer c.CloseIdleConnections()
		if _, err := c.Identity(ctx); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}

	var pauses, resumes, freezes, thaws, raws []time.Duration
	for i := range warmups + n {
		t0 := time.Now()
		if err := svc.Pause(ctx, s.ownerID, sb.ID); err != nil {
			return nil, err
		}
		pause := time.Since(t0)
		t0 = time.Now()
		if err := svc.Resume(ctx, s.ownerID, sb.ID); err != nil {
			return nil, err
		}
		resume := time.Since(t0)
		t0 = time.Now()
		if err := g.Freeze(ctx); err != nil {
			return nil, err
		}
		freeze := time.Since(t0)
		t0 = time.Now()
		if err := g.Thaw(ctx); err != nil {
			return nil, err
		}
		thaw := time.Since(t0)
		raw, err := rawResume()
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			pauses, resumes = append(pauses, pause), append(resumes, resume)
			freezes, thaws, raws = append(freezes, freeze), append(thaws, thaw), append(raws, raw)
		}
	}
	freezeBase := "freeze a one-process cgroup until the kernel reports it frozen (cgroup " + b.Cgroups().FreezerVersion() + " freezer" + ")"
	const thawBase = "thaw that cgroup"
	const rawBase = "thaw the sandbox's own cgroup, frozen directly, and one request to its runtime on a new connection"
	return []row{
		timeRow("pause (bwrap backend: cgroup frozen), p50", 50, pauses, freezes, freezeBase),
		timeRow("pause (bwrap backend), p99", 99, pauses, freezes, freezeBase),
		timeRow("resume (bwrap backend: runtime answers again), p50", 50, resumes, thaws, thawBase),
		timeRow("resume (bwrap backend), p99", 99, resumes, thaws, thawBase),
		timeRow("resume (bwrap backend: runtime answers again), p50", 50, resumes, raws, rawBase),
		timeRow("resume (bwrap backend), p99", 99, resumes, raws, rawBase),
	}, nil
}

// bwrapMemory measures the resident memory (the VmRSS of every process in its cgroup) of one
// running sandbox with network none (as the bare one has no slirp4netns), beside that of a
// bare bwrap running sleep, which it also returns. The idle group measures it at length.
func bwrapMemory(ctx context.Context, s *server, b *bwrap.Backend) (row, float64, error) {
	sb, done, err := s.runningSandboxOf(ctx, specNoNetwork)
	defer done()
	if err != nil {
		return row{}, 0, err
	}
	g, err := b.Group(sb.Instance)
	if err != nil {
		return row{}, 0, err
	}
	rss, err := groupMemory(g, rssOf)
	if err != nil {
		return row{}, 0, err
	}
	bare, stop, err := bareGroup(ctx, b, "bench-rss", "sleep", "600")
	if err != nil {
		return row{}, 0, err
	}
	defer stop()
	floor, err := groupMemory(bare, rssOf)
	if err != nil {
		return row{}, 0, err
	}
	return row{
		figure: "resident memory of a sandbox just started (bwrap backend, network none, VmRSS of its cgroup's processes)",
		agentd: float64(rss), primitive: float64(floor), unit: unitSize,
		baseline: "bare `bwrap … sleep` (its processes' VmRSS)",
	}, float64(floor), nil
}

// bwrapMany starts n sandboxes at once and measures the time until all are RUNNING and
// their total resident memory, beside n bare `bwrap … true` run at once and n times the
// memory of a bare bwrap running sleep.
func bwrapMany(ctx context.Context, s *server, b *bwrap.Backend, n int, floor float64) ([]row, string, error) {
	svc := s.app.Sandboxes
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			sb, err := svc.Start(ctx, s.ownerID, "")
			ids[i] = sb.ID
			if err == nil {
				_, err = svc.WaitRunning(ctx, s.ownerID, sb.ID)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	all := time.Since(t0)
	defer func() {
		var dwg sync.WaitGroup
		for _, id := range ids {
			if id != "" {
				dwg.Go(func() { _ = svc.Delete(context.WithoutCancel(ctx), s.ownerID, id) })
			}
		}
		dwg.Wait()
	}()
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("start %d sandboxes at once: %w", n, err)
	}
	var total, pss int64
	for _, id := range ids {
		sb, err := svc.Get(ctx, s.ownerID, id)
		if err != nil {
			return nil, "", err
		}
		g, err := b.Group(sb.Instance)
		if err != nil {
			return nil, "", err
		}
		rss, err := groupMemory(g, rssOf)
		if err != nil {
			return nil, "", err
		}
		p, err := groupMemory(g, pssOf)
		if err != nil {
			return nil, "", err
		}
		total, pss = total+rss, pss+p
	}

	bares := make([]error, n)
	t0 = time.Now()
	for i := range n {
		wg.Go(func() { bares[i] = b.BareCommand(nil, "true").Run() })
	}
	wg.Wait()
	bareAll := time.Since(t0)
	if err := errors.Join(bares...); err != nil {
		return nil, "", fmt.Errorf("run %d bare bwrap at once: %w", n, err)
	}
	note := fmt.Sprintf("%d bwrap sandboxes at once: VmRSS %.1f MiB each on average, but pages shared between them (the agentd binary, the C library) count in every one; their PSS (each shared page split among its users) is %.1f MiB in all, %.1f MiB each. The machine has %d CPUs.",
		n, float64(total)/float64(n)/(1<<20), float64(pss)/(1<<20), float64(pss)/float64(n)/(1<<20), countCPUs())
	return []row{
		{figure: fmt.Sprintf("%d sandboxes started at once, until all RUNNING (bwrap backend)", n), agentd: seconds(all), primitive: seconds(bareAll), unit: unitTime,
			baseline: fmt.Sprintf("%d bare `bwrap … true` at once", n)},
		{figure: fmt.Sprintf("resident memory of those %d sandboxes", n), agentd: float64(total), primitive: float64(n) * floor, unit: unitSize,
			baseline: fmt.Sprintf("%d × a bare `bwrap … sleep`", n)},
	}, note, nil
}

// bareGroup runs argv in a bare bwrap inside a new cgroup under the backend's parent, and
// returns once argv's process runs; stop kills it and removes the cgroup.
func bareGroup(ctx context.Context, b *bwrap.Backend, name string, argv ...string) (*cgroup.Group, func(), error) {
	g, err := b.Cgroups().Group(b.CgroupParent() + "/" + name)
	if err != nil {
		return nil, nil, err
	}
	if err := g.Create(cgroup.Limits{}); err != nil {
		return nil, nil, err
	}
	cmd := b.BareCommand(g, argv...)
	if err := cmd.Start(); err != nil {
		_ = g.Destroy(ctx)
		return nil, nil, err
	}
	stop := func() {
		_ = g.Destroy(context.WithoutCancel(ctx))
		_ = cmd.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !groupRuns(g, argv[0]) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, nil, fmt.Errorf("bare bwrap %q did not start", argv)
		}
		time.Sleep(time.Millisecond)
	}
	return g, stop, nil
}

// groupRuns reports whether a process named comm runs in g.
func groupRuns(g *cgroup.Group, comm string) bool {
	pids, _ := g.PIDs()
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil && strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

// groupMemory sums measure (rssOf, pssOf) over the processes in g.
func groupMemory(g *cgroup.Group, measure func(pid string) (int64, error)) (int64, error) {
	pids, err := g.PIDs()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, pid := range pids {
		rss, err := measure(strconv.Itoa(pid))
		if err != nil {
			continue // it exited meanwhile
		}
		total += rss
	}
	return total, nil
}
