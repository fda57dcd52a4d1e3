package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/bwrap"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
)

// benchIdle measures the resident memory of idle bwrap sandboxes beside a bare bwrap running
// sleep, on a server of its own (data directory dataDir). Each of o.idleRounds rounds starts
// a sandbox with network none (what the runtime adds to bwrap alone) and one with the default
// network, egress (slirp4netns besides), measures them as soon as they are RUNNING and again
// once nothing has asked them anything for o.idleWait; a third, with network none, gets tool
// calls first, as in a conversation; then a bare bwrap running sleep is measured.
// The rows give the medians; a note gives the ranges and what the processes of the last round
// hold.
func benchIdle(ctx context.Context, o options, bin, dataDir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	s, b, skipped, err := startBwrapServer(ctx, o, bin, dataDir, logw)
	if s == nil {
		return nil, skipped, err
	}
	defer s.close()

	progress("measuring the memory of %d idle bwrap sandboxes of each network, %v after they last answered", o.idleRounds, o.idleWait)
	var started, idle, egress, egressFloor, worked, workedFloor, workedRuntime, bare []int64
	var ratios []float64
	var last idleRound
	for range o.idleRounds {
		r, err := measureIdle(ctx, s, b, o.idleWait)
		if err != nil {
			return nil, nil, err
		}
		started, idle, bare = append(started, r.started), append(idle, r.idle), append(bare, r.bare)
		egress, egressFloor = append(egress, r.egress), append(egressFloor, r.bare+r.slirp)
		worked, workedFloor, workedRuntime = append(worked, r.worked), append(workedFloor, r.bare+r.bash), append(workedRuntime, r.workedRuntime)
		ratios = append(ratios, float64(r.idle)/float64(r.bare))
		last = r
	}
	note := fmt.Sprintf("idle bwrap sandboxes over %d rounds, each beside a bare `bwrap … sleep` measured in the same round: with network none, VmRSS %s once idle (%v after it last answered; %s the bare one), %s as soon as it is RUNNING; with network egress %s once idle; after %d tool calls, %s once idle, its runtime %s; the bare one %s. Last round, per process (VmRSS = RssAnon + RssFile): sandbox with network none: %s; with egress: %s; after the tool calls: %s; bare: %s.",
		len(idle), sizeRange(idle), o.idleWait, ratioRange(ratios), sizeRange(started), sizeRange(egress), 3*idleWorkRounds, sizeRange(worked), sizeRange(workedRuntime), sizeRange(bare),
		last.noneProcs, last.egressProcs, last.workedProcs, last.bareProcs)
	const floor = "bare `bwrap … sleep` (its processes' VmRSS), same round"
	return []row{
		{figure: fmt.Sprintf("resident memory of an idle sandbox, %v after it last answered (bwrap backend, network none, VmRSS of its cgroup's processes), median", o.idleWait),
			agentd: medianSize(idle), primitive: medianSize(bare), unit: unitSize, baseline: floor},
		{figure: "the same as soon as it is RUNNING, median",
			agentd: medianSize(started), primitive: medianSize(bare), unit: unitSize, baseline: floor},
		{figure: "the same idle with network egress (the default: slirp4netns too), median",
			agentd: medianSize(egress), primitive: medianSize(egressFloor), unit: unitSize, baseline: "bare `bwrap … sleep` plus the sandbox's slirp4netns, same round"},
		{figure: fmt.Sprintf("the same idle after %d tool calls (terminal, file editor, grep; its terminal's shell still there), median", 3*idleWorkRounds),
			agentd: medianSize(worked), primitive: medianSize(workedFloor), unit: unitSize, baseline: "bare `bwrap … sleep` plus the sandbox's shell, same round"},
	}, []string{note}, nil
}

// idleWorkRounds is how many times the worked sandbox of benchIdle runs each of its tools.
const idleWorkRounds = 20

// work makes the sandbox's runtime do what a conversation does: terminal commands that print,
// files viewed in the file editor, searches.
func work(ctx context.Context, s *server, sb sandbox.Sandbox) error {
	rt, err := s.app.Sandboxes.Client(ctx, s.ownerID, sb.ID)
	if err != nil {
		return err
	}
	defer rt.CloseIdleConnections()
	id, err := rt.Identity(ctx)
	if err != nil {
		return err
	}
	for i := range idleWorkRounds {
		file := path.Join(id.Workspace, fmt.Sprintf("f%d.txt", i))
		for _, call := range []struct{ tool, args string }{
			{"terminal", fmt.Sprintf(`{"command":"seq 1 20000 > %s; wc -l %s; ls -la"}`, file, file)},
			{"file_editor", fmt.Sprintf(`{"command":"view","path":%q}`, file)},
			{"grep", `{"pattern":"999"}`},
		} {
			res, err := rt.Tool(ctx, call.tool, "bench-idle", json.RawMessage(call.args))
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("%s %s: %s", call.tool, call.args, res.Text)
			}
		}
	}
	return nil
}

// idleRound is one round of benchIdle: VmRSS totals of a sandbox with network none as soon as
// it runs and once idle, of one with network egress once idle and of its slirp4netns, of one
// that worked once idle, of its shell and its runtime, and of a bare bwrap running sleep; and
// the processes of each.
type idleRound struct {
	started, idle, egress, slirp, bare             int64
	worked, bash, workedRuntime                    int64
	noneProcs, egressProcs, workedProcs, bareProcs string
}

// measureIdle starts a sandbox of each network and measures them as soon as they are RUNNING
// and again after wait without a request, and a third after tool calls and that wait, then a
// bare bwrap running sleep.
func measureIdle(ctx context.Context, s *server, b *bwrap.Backend, wait time.Duration) (r idleRound, err error) {
	none, doneNone, err := s.runningSandboxOf(ctx, specNoNetwork)
	defer doneNone()
	if err != nil {
		return r, err
	}
	noneGroup, err := b.Group(none.Instance)
	if err != nil {
		return r, err
	}
	if r.started, err = groupMemory(noneGroup, rssOf); err != nil {
		return r, err
	}
	egress, doneEgress, err := s.runningSandbox(ctx)
	defer doneEgress()
	if err != nil {
		return r, err
	}
	egressGroup, err := b.Group(egress.Instance)
	if err != nil {
		return r, err
	}
	worked, doneWorked, err := s.runningSandboxOf(ctx, specNoNetwork)
	defer doneWorked()
	if err != nil {
		return r, err
	}
	workedGroup, err := b.Group(worked.Instance)
	if err != nil {
		return r, err
	}
	if err := work(ctx, s, worked); err != nil {
		return r, fmt.Errorf("tool calls in sandbox %s: %w", worked.ID, err)
	}
	bare, stop, err := bareGroup(ctx, b, "bench-idle", "sleep", "600")
	if err != nil {
		return r, err
	}
	defer stop()
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(wait):
	}
	for _, sb := range []sandbox.Sandbox{none, egress, worked} {
		if st, err := b.Inspect(ctx, sb.Instance); err != nil || st != sandbox.StateRunning {
			return r, fmt.Errorf("idle sandbox %s: state %v, %v", sb.ID, st, err)
		}
	}
	if r.idle, err = groupMemory(noneGroup, rssOf); err != nil {
		return r, err
	}
	if r.egress, err = groupMemory(egressGroup, rssOf); err != nil {
		return r, err
	}
	if r.slirp, err = groupMemory(egressGroup, commRSS("slirp4netns")); err != nil {
		return r, err
	}
	if r.worked, err = groupMemory(workedGroup, rssOf); err != nil {
		return r, err
	}
	if r.bash, err = groupMemory(workedGroup, commRSS("bash")); err != nil {
		return r, err
	}
	if r.workedRuntime, err = groupMemory(workedGroup, commRSS("agentd")); err != nil {
		return r, err
	}
	if r.bare, err = groupMemory(bare, rssOf); err != nil {
		return r, err
	}
	r.noneProcs, r.egressProcs, r.bareProcs = groupProcesses(noneGroup), groupProcesses(egressGroup), groupProcesses(bare)
	r.workedProcs = groupProcesses(workedGroup)
	return r, nil
}

// commRSS measures the VmRSS of processes named comm, and 0 for the others.
func commRSS(comm string) func(pid string) (int64, error) {
	return func(pid string) (int64, error) {
		b, err := os.ReadFile("/proc/" + pid + "/comm")
		if err != nil || strings.TrimSpace(string(b)) != comm {
			return 0, err
		}
		return rssOf(pid)
	}
}

// groupProcesses describes the processes of g: each one's name and VmRSS, RssAnon and RssFile.
func groupProcesses(g *cgroup.Group) string {
	pids, err := g.PIDs()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	var out []string
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		comm, err := os.ReadFile("/proc/" + p + "/comm")
		if err != nil {
			continue // it exited meanwhile
		}
		rss, err1 := rssOf(p)
		anon, err2 := procKB(p, "status", "RssAnon:")
		file, err3 := procKB(p, "status", "RssFile:")
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s = %s + %s", strings.TrimSpace(string(comm)), mib(rss), mib(anon), mib(file)))
	}
	return strings.Join(out, ", ")
}

// medianSize is the median of sizes, in bytes.
func medianSize(sizes []int64) float64 {
	s := slices.Clone(sizes)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}

// sizeRange writes the smallest and largest of sizes, in MiB.
func sizeRange(sizes []int64) string {
	lo, hi := fmt.Sprintf("%.1f", float64(slices.Min(sizes))/(1<<20)), mib(slices.Max(sizes))
	if lo+" MiB" == hi {
		return hi
	}
	return lo + "–" + hi
}

// ratioRange writes the smallest and largest of ratios.
func ratioRange(ratios []float64) string {
	lo, hi := fmt.Sprintf("%.1f", slices.Min(ratios)), fmt.Sprintf("%.1f", slices.Max(ratios))
	if lo == hi {
		return lo + "×"
	}
	return lo + "–" + hi + "×"
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
