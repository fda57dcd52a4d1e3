// Command agentd-bench measures agentd's performance figures, each beside the raw primitive it
// is built on, measured in the same run, and prints them as one markdown table. It asserts
// nothing: it measures and prints. `make bench` runs it after `make build`.
//
// Everything runs on loopback in a temporary directory: a whole `agentd serve` built by
// app.New with the process backend (its sandboxes run the runtime build that agentd carries),
// served by a real net/http server, and the clients that load it; where bubblewrap works, a
// second one with the bwrap backend for the bwrap figures. The memory curve runs the agentd
// binary itself (`agentd serve`) in a process of its own, so that the RSS it reports is the
// control plane's alone, without the bench's clients and model. The replicas and PostgreSQL listing figures run on a
// throwaway PostgreSQL server that the bench starts on loopback as the tests start theirs
// (pgtest), with servers on it in this process and `agentd serve` processes that it kills with
// SIGKILL. Whatever the run started is stopped and removed before it exits, also when it fails
// or is interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/runtime"
)

// options are the command-line flags; smaller values give a shorter run.
type options struct {
	starts        int
	cycles        int
	many          int
	conversations int
	clients       int
	duration      time.Duration
	binary        string
	cpuProfile    string
	steps         int
	logs          int
	events        int
	repoFiles     int
	repoRounds    int
	listingRows   []int
	curve         []int
	// memoryLimit, when set, is the --memory-limit of the memory curve's server.
	memoryLimit  string
	profileDir   string
	only         map[string]bool
	mcpCalls     int
	streamRounds int
	idleRounds   int
	idleWait     time.Duration
	// takeoverRounds are the replica deaths to time at each point of a conversation.
	takeoverRounds int
}

// groups are the figures -only can pick, in the order they run.
var groups = []string{"starts", "repository", "pause", "docker", "kubernetes", "bwrap", "pools", "idle", "search", "agent", "mcp", "streams", "memory", "web", "curve", "listing", "listing-postgres", "replicas"}

// runs reports whether the group of figures g is to be measured.
func (o options) runs(g string) bool { return len(o.only) == 0 || o.only[g] }

func main() {
	var o options
	flag.IntVar(&o.starts, "starts", 100, "sandbox starts to time")
	flag.IntVar(&o.cycles, "cycles", 100, "pause/resume cycles to time")
	flag.IntVar(&o.many, "many", 200, "bwrap sandboxes to start at once")
	flag.IntVar(&o.conversations, "conversations", 1000, "conversations stored before the search load")
	flag.IntVar(&o.clients, "clients", 8, "concurrent HTTP clients of each load")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each HTTP load runs")
	flag.StringVar(&o.binary, "agentd", "", "agentd binary whose runtime the sandboxes run (default: bin/agentd of the module, built if missing)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (server and clients) to this file")
	flag.IntVar(&o.steps, "steps", 300, "agent steps to time per tool")
	flag.IntVar(&o.logs, "logs", 200, "conversations whose event logs the memory figure stores")
	flag.IntVar(&o.events, "events", 500, "events per conversation of the memory figure")
	flag.IntVar(&o.repoFiles, "repo-files", 3000, "files of the repository that conversations are started on")
	flag.IntVar(&o.repoRounds, "repo-rounds", 10, "conversations on a repository to time")
	flag.StringVar(&o.memoryLimit, "memory-limit", "", "--memory-limit of the memory curve's agentd serve (default: its own default)")
	curve := flag.String("curve", "50,100,200", "comma-separated, growing numbers of conversations running at once for the memory curve")
	listingRows := flag.String("listing-rows", "1000,100000", "comma-separated numbers of stored rows the listing figures run over")
	flag.StringVar(&o.profileDir, "profile", "", "write CPU and heap profiles of the heaviest figures (the listing loads, the agent steps, the streams; the memory curve: its server's heap, allocations, goroutines and /metrics at the peak, its heap, goroutines and /metrics after) into this directory")
	only := flag.String("only", "", "comma-separated groups of figures to measure (default all): "+strings.Join(groups, ", "))
	flag.IntVar(&o.mcpCalls, "mcp-calls", 500, "MCP tool calls to time per transport, through the tool router and directly")
	flag.IntVar(&o.streamRounds, "stream-rounds", 1000, "events to time on each kind and number of stream subscribers (a p99 over 200 is decided by two events)")
	flag.IntVar(&o.idleRounds, "idle-rounds", 5, "idle bwrap sandboxes to measure, one after the other")
	flag.IntVar(&o.takeoverRounds, "takeover-rounds", 5, "replicas to kill in the middle of a model call, and as many in the middle of a command, for the takeover figure")
	flag.DurationVar(&o.idleWait, "idle-wait", runtime.IdleTrimAfter+5*time.Second, "how long an idle sandbox gets no request before it is measured (its runtime trims its memory after "+runtime.IdleTrimAfter.String()+")")
	flag.Parse()
	var err error
	if o.listingRows, err = parseInts(*listingRows); err != nil {
		fmt.Fprintln(os.Stderr, "agentd-bench: -listing-rows:", err)
		os.Exit(2)
	}
	if o.curve, err = parseInts(*curve); err != nil {
		fmt.Fprintln(os.Stderr, "agentd-bench: -curve:", err)
		os.Exit(2)
	}
	if *only != "" {
		o.only = map[string]bool{}
		for g := range strings.SplitSeq(*only, ",") {
			if !slices.Contains(groups, strings.TrimSpace(g)) {
				fmt.Fprintf(os.Stderr, "agentd-bench: -only: no group %q (%s)\n", g, strings.Join(groups, ", "))
				os.Exit(2)
			}
			o.only[strings.TrimSpace(g)] = true
		}
	}
	if o.profileDir != "" && o.cpuProfile != "" {
		fmt.Fprintln(os.Stderr, "agentd-bench: -profile and -cpuprofile exclude each other (one CPU profile at a time)")
		os.Exit(2)
	}
	if o.starts < 1 || o.cycles < 1 || o.many < 1 || o.conversations < 1 || o.clients < 1 || o.duration <= 0 ||
		o.steps < 2 || o.logs < 1 || o.events < 1 || o.repoFiles < 1 || o.repoRounds < 1 || o.mcpCalls < 1 || o.streamRounds < 1 || o.idleRounds < 1 || o.idleWait < 0 || o.takeoverRounds < 1 {
		fmt.Fprintln(os.Stderr, "agentd-bench: -starts, -cycles, -many, -conversations, -clients, -duration, -steps, -logs, -events, -repo-files, -repo-rounds, -mcp-calls, -stream-rounds, -idle-rounds and -takeover-rounds must be positive, -idle-wait not negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o, os.Stdout, os.Stderr)
	if err != nil && ctx.Err() != nil {
		err = errors.New("interrupted; everything it started is stopped and removed")
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd-bench:", err)
		os.Exit(1)
	}
}

// run measures every figure and prints the report to out; progress goes to logw.
func run(ctx context.Context, o options, out, logw io.Writer) error {
	progress := func(format string, args ...any) {
		fmt.Fprintf(logw, "agentd-bench: "+format+"\n", args...)
	}
	m := describeMachine()
	rssBare, err := readRSS()
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	tmp, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	bin, err := agentdBinary(ctx, o.binary, tmp, progress)
	if err != nil {
		return err
	}
	progress("making a repository of %d files", o.repoFiles)
	git, err := startGit(filepath.Join(tmp, "git"), o.repoFiles)
	if err != nil {
		return err
	}
	defer git.Close()
	github, closeGitHub := startGitHub(git)
	defer closeGitHub()
	srv, err := startServer(ctx, bin, filepath.Join(tmp, "data"), o.clients, logw, github.APIURL())
	if err != nil {
		return err
	}
	defer srv.close()
	if err := srv.storeGitHubToken(ctx); err != nil {
		return err
	}

	rep := report{machine: m, options: o, binary: bin}
	seeded := listingSeeds{}
	add := func(rows []row, notes []string, err error) error {
		rep.rows = append(rep.rows, rows...)
		rep.notes = append(rep.notes, notes...)
		return err
	}
	steps := []struct {
		group string
		run   func() ([]row, []string, error)
	}{
		{"starts", func() ([]row, []string, error) {
			progress("timing %d sandbox starts", o.starts)
			rows, err := benchStarts(ctx, srv, bin, o.starts)
			return rows, nil, err
		}},
		{"repository", func() ([]row, []string, error) {
			progress("timing %d conversations on a repository of %d files", o.repoRounds, o.repoFiles)
			return benchRepository(ctx, srv, git, o.repoFiles, o.repoRounds, tmp)
		}},
		{"pause", func() ([]row, []string, error) {
			progress("timing %d pause/resume cycles", o.cycles)
			return benchPause(ctx, srv, o.cycles)
		}},
		{"docker", func() ([]row, []string, error) { return benchDocker(ctx, bin, tmp, logw, progress) }},
		{"kubernetes", func() ([]row, []string, error) { return benchKubernetes(ctx, bin, tmp, logw, progress) }},
		{"bwrap", func() ([]row, []string, error) {
			return benchBwrap(ctx, o, bin, filepath.Join(tmp, "bwrap-data"), logw, progress)
		}},
		{"pools", func() ([]row, []string, error) {
			return benchPools(ctx, o, bin, filepath.Join(tmp, "pools-data"), logw, progress)
		}},
		{"idle", func() ([]row, []string, error) {
			return benchIdle(ctx, o, bin, filepath.Join(tmp, "idle-data"), logw, progress)
		}},
		{"search", func() ([]row, []string, error) {
			rows, notes, err := benchSearch(ctx, srv, o, progress)
			if err != nil {
				return nil, nil, err
			}
			rss, err := readRSS()
			return append(rows, row{
				figure: fmt.Sprintf("RSS of the process after loading %d conversations", o.conversations),
				agentd: float64(rss), primitive: float64(rssBare), unit: unitSize,
				baseline: "the same process before app.New",
			}), notes, err
		}},
		{"agent", func() ([]row, []string, error) { return benchAgent(ctx, srv, o, progress) }},
		{"mcp", func() ([]row, []string, error) { return benchMCP(ctx, srv, tmp, o.mcpCalls, progress) }},
		{"streams", func() ([]row, []string, error) { return benchStreams(ctx, srv, o, progress) }},
		{"memory", func() ([]row, []string, error) {
			return benchEventMemory(ctx, srv, filepath.Join(tmp, "data"), o.logs, o.events, progress)
		}},
		{"web", func() ([]row, []string, error) { return benchWeb(ctx, srv, filepath.Join(tmp, "data"), progress) }},
		{"curve", func() ([]row, []string, error) {
			return benchMemoryCurve(ctx, o, filepath.Join(tmp, "curve-data"), logw, progress)
		}},
		{"listing", func() ([]row, []string, error) { return benchListing(ctx, o, bin, tmp, seeded, logw, progress) }},
		{"listing-postgres", func() ([]row, []string, error) {
			dir := filepath.Join(tmp, "pl")
			return onPostgres(ctx, dir, progress, func(pg *postgresServer) ([]row, []string, error) {
				return benchListingPostgres(ctx, o, pg, bin, dir, seeded, logw, progress)
			})
		}},
		{"replicas", func() ([]row, []string, error) {
			return benchReplicas(ctx, o, bin, filepath.Join(tmp, "pg"), logw, progress)
		}},
	}
	for _, st := range steps {
		if !o.runs(st.group) {
			continue
		}
		if err := add(st.run()); err != nil {
			return err
		}
	}
	rep.print(out)
	return nil
}

// startCPUProfile profiles the process into path until the returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// parseInts reads a comma-separated list of positive numbers.
func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
