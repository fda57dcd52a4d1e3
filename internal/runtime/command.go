package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// pipeGrace is how long a finished command's output pipe may stay open. A command that
// leaves a background process holding its stdout would otherwise never return.
const pipeGrace = 100 * time.Millisecond

// maxDrain bounds what is read of an output pipe after pipeGrace, when a process the command
// left behind may go on writing to it.
const maxDrain = 1 << 20

// startWithOutput starts cmd with its standard output and error on pipes whose ends this
// process reads into stdout and stderr (one pipe when they are the same writer, so that the
// two keep their order). The returned wait waits for the command to exit, then for its output:
// until the pipes are at their end, or pipeGrace at most when a process it left in the
// background holds one open. After pipeGrace what a pipe holds is still read, so no byte
// written before the command exited is lost, however late this process gets a CPU to read
// it (os/exec's WaitDelay closes the pipes and drops what is unread).
func startWithOutput(cmd *exec.Cmd, stdout, stderr io.Writer) (wait func() error, err error) {
	var pipes []*outPipe
	var ends []*os.File // the command's ends, closed here once it has them
	defer func() {
		for _, f := range ends {
			f.Close()
		}
		if err != nil {
			for _, p := range pipes {
				p.r.Close()
			}
		}
	}()
	writers := []io.Writer{stdout}
	if !sameWriter(stderr, stdout) {
		writers = append(writers, stderr)
	}
	for _, w := range writers {
		r, end, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		ends = append(ends, end)
		pipes = append(pipes, &outPipe{r: r, w: w, done: make(chan struct{})})
	}
	cmd.Stdout, cmd.Stderr = ends[0], ends[len(ends)-1]
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for _, p := range pipes {
		go p.copy()
	}
	return func() error {
		err := cmd.Wait()
		grace := time.NewTimer(pipeGrace)
		defer grace.Stop()
	waiting:
		for _, p := range pipes {
			select {
			case <-p.done:
			case <-grace.C:
				for _, q := range pipes {
					if q.r.SetReadDeadline(time.Now()) != nil {
						q.r.Close() // a pipe without deadlines: what it holds is lost, as with os/exec
					}
				}
				break waiting
			}
		}
		for _, p := range pipes {
			<-p.done
			p.r.Close()
		}
		return err
	}, nil
}

// sameWriter reports whether a and b are the same writer (false for writers that cannot be
// compared).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// outPipe is the end of an output pipe this process reads into w; done is closed once it
// is read.
type outPipe struct {
	r    *os.File
	w    io.Writer
	done chan struct{}
}

// copy copies the pipe to w until its end or, once a deadline is set, what it holds then.
func (p *outPipe) copy() {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			p.w.Write(buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.drain(buf)
		}
		if err != nil {
			return
		}
	}
}

// drain reads what the pipe holds without waiting for more, up to maxDrain bytes.
func (p *outPipe) drain(buf []byte) {
	if p.r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := p.r.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		for read := 0; read < maxDrain; {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break
			}
			p.w.Write(buf[:n])
			read += n
		}
		return true
	})
}

// runCommand runs req (already validated, Cwd absolute) and collects its output; onOutput,
// when set, is given the output as it is kept.
//
// The command gets its own process group so a timeout or a client that goes away kills it
// with everything it started. It stays in the runtime's session: backends freeze a sandbox by
// session, so a command must not leave it.
func (s *Server) runCommand(ctx context.Context, req runtimeclient.CommandRequest, onOutput func([]byte)) (runtimeclient.CommandResult, error) {
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &cappedBuffer{limit: runtimeclient.MaxOutputBytes, onKeep: onOutput}
	cmd := s.shellCommand(runCtx, req.Command, req.Cwd, req.Env)

	start := time.Now()
	wait, err := startWithOutput(cmd, out, out)
	if err != nil {
		return runtimeclient.CommandResult{}, fmt.Errorf("start command: %w", err)
	}
	err = wait()
	timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil

	res := runtimeclient.CommandResult{TimedOut: timedOut}
	res.Output, res.Truncated = out.result()
	switch {
	case timedOut:
		res.ExitCode = -1
	case cmd.ProcessState != nil:
		res.ExitCode = exitCode(cmd.ProcessState.Sys())
	case err != nil:
		return runtimeclient.CommandResult{}, fmt.Errorf("wait for command: %w", err)
	}
	s.log.Debug("command finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"output_bytes", len(res.Output), "duration", time.Since(start))
	return res, nil
}

// shellCommand prepares a command line to run in dir in its own process group, which is
// killed whole when ctx ends.
func (s *Server) shellCommand(ctx context.Context, line, dir string, env map[string]string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.shell, "-c", line)
	cmd.Dir = dir
	cmd.Env = s.commandEnv(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cfg.Credential}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace
	return cmd
}

// exitCode maps a wait status the way shells do: 128+n for a command ended by signal n.
func exitCode(sys any) int {
	ws, ok := sys.(syscall.WaitStatus)
	if !ok {
		return -1
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// commandEnv is the runtime's environment (without the session key) plus extra. Later
// entries win in os/exec, so extra overrides.
func (s *Server) commandEnv(extra map[string]string) []string {
	env := make([]string, 0, len(s.env)+len(extra))
	env = append(env, s.env...)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}
