package bwrap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// defaultCommand starts the runtime when a spec names no command.
var defaultCommand = []string{"agentd", "runtime"}

// listenTimeout bounds each of Start's waits (for bwrap's set-up, the runtime's answer,
// slirp4netns) when ctx has no deadline.
const listenTimeout = 30 * time.Second

// waitDeadline is when a wait of Start gives up (see sandbox.WaitDeadline).
func waitDeadline(ctx context.Context) time.Time { return sandbox.WaitDeadline(ctx, listenTimeout) }

// Start creates <Root>/<id>/ and the sandbox's cgroup, binds the runtime's socket, and starts
// bwrap with the runtime in it. It returns once the runtime serves on that socket, so that a
// sandbox that cannot start (a bad mount, a runtime that exits) fails here, with the cause
// from its log, rather than later as a runtime that never answers.
func (b *Backend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	if err := b.checkSpec(req.Spec); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if _, err := req.RuntimeKey(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	// group checks the id first.
	g, err := b.group(req.ID, instanceState{})
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	dir, err := b.root.Create(req.ID)
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	inst, err := b.start(ctx, dir, g, req)
	if err != nil {
		if rmErr := hostproc.RemoveAll(dir); rmErr != nil {
			b.log.Error("remove sandbox directory after failed start", "sandbox_id", req.ID, "err", rmErr)
		}
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	return inst, nil
}

// start makes the rest of the sandbox in dir, creates its cgroup g and starts it.
func (b *Backend) start(ctx context.Context, dir string, g *cgroup.Group, req sandbox.StartRequest) (_ sandbox.Instance, err error) {
	ws := workspaceOf(req.Spec)
	if err := os.Mkdir(hostWorkspace(dir), 0o700); err != nil {
		return sandbox.Instance{}, fmt.Errorf("create workspace: %w", err)
	}
	if err := os.Chown(hostWorkspace(dir), b.uid, b.uid); err != nil {
		return sandbox.Instance{}, fmt.Errorf("give the workspace to the sandbox uid: %w", err)
	}

	// The runtime's socket is bound here, outside the sandbox, and handed to the runtime as an
	// inherited listener (fd 5): the sandbox needs no writable host directory for it, and
	// nothing in the sandbox can replace it.
	lnFile, err := listenFile(hostSocket(dir))
	if err != nil {
		return sandbox.Instance{}, err
	}
	defer lnFile.Close() // the child has its own copy
	logFile, err := os.OpenFile(logPath(dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("create runtime log: %w", err)
	}
	defer logFile.Close() // the child has its own copy

	args, err := b.sandboxArgs(dir, ws, req.Spec)
	if err != nil {
		return sandbox.Instance{}, err
	}
	// bwrap reads its options from a file (fd 4) rather than its command line, which every
	// process in the sandbox could read from /proc/1/cmdline: they name host paths.
	argsFile, err := argsMemfd(args)
	if err != nil {
		return sandbox.Instance{}, err
	}
	defer argsFile.Close()
	// The key travels through a pipe (fd 3), not the environment or the arguments, so no
	// command in the sandbox can read it from /proc.
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("key pipe: %w", err)
	}
	defer keyR.Close()
	key, _ := req.RuntimeKey() // a pooled start's is its pool's secret
	_, err = keyW.WriteString(key)
	keyW.Close()
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("key pipe: %w", err)
	}

	extra := []*os.File{keyR, argsFile, lnFile} // fdKey, fdArgs, fdListen
	var egress *egressFiles
	if sandbox.NetworkOf(req.Spec) == sandbox.NetworkEgress {
		if egress, err = newEgressFiles(); err != nil {
			return sandbox.Instance{}, err
		}
		defer egress.Close()
		extra = append(extra, egress.bwrapFiles()...) // fdInfo, fdSync, fdResolve
	}

	if err := g.Create(cgroupLimits(req.Spec.Limits)); err != nil {
		return sandbox.Instance{}, err
	}
	var st instanceState
	defer func() {
		if err != nil {
			if derr := g.Destroy(context.WithoutCancel(ctx)); derr != nil {
				b.log.Error("remove cgroup after failed start", "sandbox_id", req.ID, "err", derr)
			}
			reapFirst(st)
		}
	}()

	// Not CommandContext: the sandbox must outlive the request that started it.
	bwrapArgv := append([]string{b.bwrap, "--args", strconv.Itoa(fdArgs), "--"}, runtimeCommand(req, ws)...)
	cmd := exec.Command(shell, joinArgs(g, b.asSandboxUser(bwrapArgv))...)
	cmd.Dir = "/"
	cmd.Env = b.env(ws, req.Spec)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.ExtraFiles = extra
	// Its own session, so that signals to agentd's terminal or process group do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startStaged(cmd, stage{workspace: hostWorkspace(dir), binary: b.binary, rootfs: req.Spec.Rootfs}); err != nil {
		return sandbox.Instance{}, fmt.Errorf("exec %s: %w", shell, err)
	}
	st = instanceState{PID: cmd.Process.Pid, Cgroup: g.Path()}
	p, err := hostproc.ReadStat(st.PID)
	if err != nil {
		_ = g.Destroy(context.WithoutCancel(ctx))
		_ = cmd.Wait()
		return sandbox.Instance{}, fmt.Errorf("read sandbox process: %w", err)
	}
	st.StartTime = p.StartTime
	b.reaper.Watch(cmd)
	if egress != nil {
		egress.started()
	}
	if err := b.waitServing(ctx, dir, st); err != nil {
		return sandbox.Instance{}, err
	}
	if egress != nil {
		// Only now: bwrap sets up the namespace's loopback after it reports the pid, and
		// slirp4netns configuring the namespace meanwhile makes that fail. Once the runtime
		// serves, bwrap's set-up is over.
		pid, err := childPID(egress.infoR, waitDeadline(ctx))
		if err != nil {
			return sandbox.Instance{}, fmt.Errorf("%w: %s", err, logTail(dir))
		}
		if err := b.startSlirp(ctx, g, pid, egress, logFile, &st); err != nil {
			return sandbox.Instance{}, fmt.Errorf("egress network: %w: %s", err, logTail(dir))
		}
	}
	b.log.Info("sandbox started", "sandbox_id", req.ID, "pid", st.PID, "cgroup", g.Path())
	return sandbox.Instance{
		ID:            req.ID,
		Endpoint:      "unix:" + hostSocket(dir),
		Workspace:     ws,
		HostWorkspace: hostWorkspace(dir),
		State:         st.encode(),
	}, nil
}

// runtimeCommand is the spec's command, with "agentd" mounted from the host and the flags
// that tell the runtime where it listens, its workspace, its id and where its key is.
func runtimeCommand(req sandbox.StartRequest, ws string) []string {
	argv := slices.Clone(req.Spec.Command)
	if len(argv) == 0 {
		argv = slices.Clone(defaultCommand)
	}
	if argv[0] == "agentd" {
		argv[0] = runtimeBinary
	}
	return req.RuntimeArgs(append(argv, "--listen", "fd:"+strconv.Itoa(fdListen), "--workspace", ws,
		"--sandbox-id", req.ID, "--key-fd", strconv.Itoa(fdKey)))
}

// argsMemfd returns an anonymous file holding args, each ended by a NUL, as bwrap's --args
// reads them. Options only: bwrap takes the command from its command line.
func argsMemfd(args []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("bwrap arguments: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bwrap-args")
	var sb strings.Builder
	for _, a := range args {
		if strings.ContainsRune(a, 0) {
			f.Close()
			return nil, fmt.Errorf("bwrap argument %q holds a NUL byte", a)
		}
		sb.WriteString(a)
		sb.WriteByte(0)
	}
	if _, err := io.WriteString(f, sb.String()); err != nil {
		f.Close()
		return nil, fmt.Errorf("bwrap arguments: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("bwrap arguments: %w", err)
	}
	return f, nil
}

// livenessInterval bounds the pause between two checks of waitServing, and is the least time
// one check gives the runtime to answer.
const livenessInterval = 20 * time.Millisecond

// maxAliveWait is the most time one check of waitServing gives the runtime to answer; between
// checks it looks whether the sandbox has exited.
const maxAliveWait = time.Second

// listenFile binds a unix socket at path (mode 0600) and returns it as a file to hand to the
// runtime. Closing the returned file leaves the socket in place.
func listenFile(path string) (*os.File, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("bind the runtime socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("bind the runtime socket: %w", err)
	}
	f, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("bind the runtime socket: %w", err)
	}
	return f, nil
}

// waitServing waits until the runtime answers GET /alive on its socket, or the sandbox's
// first process has exited (then the error quotes the end of its log), or ctx's deadline
// (listenTimeout without one). The socket exists from the start, and the kernel queues
// connections until the runtime accepts them, so one request waits as long as the runtime
// takes to come up. Each check gives the runtime a quarter of the time waited so far to
// answer (from livenessInterval up to maxAliveWait): on a busy machine a runtime can take
// longer than livenessInterval to answer, and a check given up too early is one more
// connection the runtime must still get through before it reaches the next.
func (b *Backend) waitServing(ctx context.Context, dir string, st instanceState) error {
	begin := time.Now()
	deadline := waitDeadline(ctx)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, livenessInterval) {
		wait := min(max(livenessInterval, time.Since(begin)/4), maxAliveWait)
		if alive(ctx, hostSocket(dir), wait) {
			return nil
		}
		if p, err := hostproc.ReadStat(st.PID); err != nil || p.StartTime != st.StartTime || p.Dead() {
			return fmt.Errorf("the sandbox exited while starting: %s", logTail(dir))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runtime did not answer within %v: %s", time.Since(begin).Round(time.Millisecond), logTail(dir))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wait for the runtime: %w", err)
		}
		time.Sleep(delay)
	}
}

// alive sends GET /alive on the unix socket at path and reports whether a 200 came back
// within wait.
func alive(ctx context.Context, path string, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return false
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, "GET /alive HTTP/1.1\r\nHost: runtime\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// logTail returns the last lines of the sandbox's log, for an error message.
func logTail(dir string) string {
	const max = 1024
	b, err := os.ReadFile(logPath(dir))
	if err != nil {
		return "no log: " + err.Error()
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "its log is empty"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}
