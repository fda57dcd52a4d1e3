// Command agentd-bench measures agentd's performance figures, each beside the raw primitive it
// is built on, measured in the same run, and prints them as one markdown table. It asserts
// nothing: it measures and prints. `make bench` runs it after `make build`.
//
// Everything runs on loopback in a temporary directory: a whole `agentd serve` built by
// app.New with the process backend (its sandboxes run the runtime build that agentd carries),
// served by a real net/http server, and the clients that load it; where bubblewrap works, a
// second one with the bwrap backend for the bwrap figures. Whatever the run started is stopped
// and removed before it exits, also when it fails or is interrupted.
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
	"syscall"
	"time"
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
	mcpCalls      int
	streamRounds  int
}

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
	flag.IntVar(&o.mcpCalls, "mcp-calls", 500, "MCP tool calls to time per transport, through the tool router and directly")
	flag.IntVar(&o.streamRounds, "stream-rounds", 200, "events to time on each kind and number of stream subscribers")
	flag.Parse()
	if o.starts < 1 || o.cycles < 1 || o.many < 1 || o.conversations < 1 || o.clients < 1 || o.duration <= 0 ||
		o.steps < 2 || o.logs < 1 || o.events < 1 || o.repoFiles < 1 || o.repoRounds < 1 || o.mcpCalls < 1 || o.streamRounds < 1 {
		fmt.Fprintln(os.Stderr, "agentd-bench: -starts, -cycles, -many, -conversations, -clients, -duration, -steps, -logs, -events, -repo-files, -repo-rounds, -mcp-calls and -stream-rounds must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout, os.Stderr)
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
	progress("timing %d sandbox starts", o.starts)
	rows, err := benchStarts(ctx, srv, bin, o.starts)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)

	progress("timing %d conversations on a repository of %d files", o.repoRounds, o.repoFiles)
	rows, notes, err := benchRepository(ctx, srv, git, o.repoFiles, o.repoRounds, tmp)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)

	progress("timing %d pause/resume cycles", o.cycles)
	rows, notes, err = benchPause(ctx, srv, o.cycles)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)

	rows, notes, err = benchDocker(ctx, bin, tmp, logw, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)

	rows, notes, err = benchBwrap(ctx, o, bin, filepath.Join(tmp, "bwrap-data"), logw, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)

	rows, notes, err = benchSearch(ctx, srv, o, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)

	rss, err := readRSS()
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, row{
		figure: fmt.Sprintf("RSS of the process after loading %d conversations", o.conversations),
		agentd: float64(rss), primitive: float64(rssBare), unit: unitSize,
		baseline: "the same process before app.New",
	})

	rows, notes, err = benchAgent(ctx, srv, o.steps, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)
	rows, notes, err = benchMCP(ctx, srv, tmp, o.mcpCalls, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)
	rows, notes, err = benchStreams(ctx, srv, o.streamRounds, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)
	rows, notes, err = benchEventMemory(ctx, srv, filepath.Join(tmp, "data"), o.logs, o.events, progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)
	rows, notes, err = benchWeb(ctx, srv, filepath.Join(tmp, "data"), progress)
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, rows...)
	rep.notes = append(rep.notes, notes...)
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
