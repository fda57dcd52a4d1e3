// Package dockertest gives the docker backend's tests and benchmarks an engine and an image
// without a registry: a private dockerd (Debian's docker.io) with its own directories under a
// short temporary path, no bridge and no firewall rules, and a small image assembled from the
// host's own bash and core utilities and imported through the engine API.
//
// It does not import testing, so the benchmark command can use it too.
package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by Start when this machine cannot run a private engine (no
// dockerd, not root); the error says which. Other errors mean the engine failed.
var ErrUnavailable = errors.New("no docker engine for the tests")

// Bounds of the daemon's start and stop.
const (
	readyTimeout = time.Minute
	stopTimeout  = 30 * time.Second
)

// Daemon is a running private dockerd.
type Daemon struct {
	// Host is the engine's address, "unix:///tmp/…/docker.sock".
	Host string
	// CgroupParent is the cgroup under which the engine puts its containers' cgroups, in
	// every hierarchy (cgroupfs driver), relative to the engine's own cgroup there (which is
	// that of the process that started it).
	CgroupParent string
	// Client talks to the engine.
	Client *client.Client

	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// Start starts dockerd with its data, state, pid file and socket under a new temporary
// directory and waits until it answers. The daemon's log goes to <dir>/dockerd.log and is
// quoted in errors.
func Start(ctx context.Context) (_ *Daemon, err error) {
	dockerd, err := findDockerd()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: a private dockerd needs root", ErrUnavailable)
	}
	// Short: the engine's own unix sockets live under it.
	dir, err := os.MkdirTemp("", "dk")
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		Host:         "unix://" + filepath.Join(dir, "docker.sock"),
		CgroupParent: "agentd-test-" + filepath.Base(dir),
		dir:          dir,
		exited:       make(chan struct{}),
	}
	defer func() {
		if err != nil {
			if serr := d.Stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	config := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(config, []byte("{}\n"), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(d.logPath())
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	d.cmd = exec.Command(dockerd,
		"--config-file", config,
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--host", d.Host,
		// Leave the host's network and firewall alone: no docker0, no iptables rules.
		"--bridge", "none",
		"--iptables=false",
		"--exec-opt", "native.cgroupdriver=cgroupfs",
		"--cgroup-parent", d.CgroupParent,
		"--log-level", "warn",
	)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	// Should this process die without stopping it, the daemon stops too (SIGTERM: it stops
	// its containers and its containerd).
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// Pdeathsig follows the thread that started the child, not the process, and Go ends a
	// thread whose goroutine exits while locked to it (as test code that enters a network
	// namespace does). Started from such a thread, the daemon would stop in the middle of
	// the tests; so it starts from a thread of its own, held until the daemon has exited.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := d.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	if d.Client, err = client.New(client.WithHost(d.Host)); err != nil {
		return nil, err
	}
	if err := d.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("%w; dockerd log:\n%s", err, d.logTail())
	}
	return d, nil
}

// findDockerd looks in PATH and in the directories Debian installs it to (a non-root PATH
// may lack /usr/sbin).
func findDockerd() (string, error) {
	if p, err := exec.LookPath("dockerd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/dockerd", "/usr/bin/dockerd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: dockerd is not installed (Debian: apt-get install docker.io, or run scripts/deps.sh as root)", ErrUnavailable)
}

func (d *Daemon) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := d.Client.Ping(pctx, client.PingOptions{})
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("dockerd exited: %v", d.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("dockerd did not answer within %v: %w", readyTimeout, err)
		case <-time.After(delay):
		}
	}
}

// Stop removes every container and volume of the engine, stops it, and removes what it left:
// leftover processes under its directory, mounts, its cgroups and its directory. Safe to call
// twice.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() { d.stopErr = d.stop() })
	return d.stopErr
}

func (d *Daemon) stop() error {
	var errs []error
	if d.cmd != nil && d.cmd.Process != nil {
		if d.Client != nil {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			errs = append(errs, d.removeAll(ctx))
			cancel()
		}
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(stopTimeout):
			_ = d.cmd.Process.Kill()
			<-d.exited
			errs = append(errs, fmt.Errorf("dockerd did not stop within %v; killed", stopTimeout))
		}
	}
	if d.Client != nil {
		_ = d.Client.Close()
	}
	errs = append(errs, killUnder(d.dir), unmountUnder(d.dir), removeCgroups(d.CgroupParent))
	if err := os.RemoveAll(d.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", d.dir, err))
	}
	return errors.Join(errs...)
}

// removeAll removes every container (forcibly) and volume of the engine: they are all the
// tests'.
func (d *Daemon) removeAll(ctx context.Context) error {
	var errs []error
	cs, err := d.Client.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if _, err := d.Client.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, err)
		}
	}
	vs, err := d.Client.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list volumes: %w", err))...)
	}
	for _, v := range vs.Items {
		if _, err := d.Client.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (d *Daemon) logPath() string { return filepath.Join(d.dir, "dockerd.log") }

// logTail returns the end of the daemon's log.
func (d *Daemon) logTail() string {
	b, _ := os.ReadFile(d.logPath())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// killUnder kills every process whose command line names dir: the engine's containerd and
// shims, should any outlive it. They were all started by this Daemon.
func killUnder(dir string) error {
	for range 50 {
		pids := processesNaming(dir)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("processes naming %s survive SIGKILL: %v", dir, processesNaming(dir))
}

func processesNaming(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what the engine still holds of the container or volume named: the
// containers and volumes whose labels include label=value, and cgroup directories of the
// container ids given.
func (d *Daemon) Leftovers(ctx context.Context, label, value string, containerIDs ...string) []string {
	var left []string
	f := client.Filters{}.Add("label", label+"="+value)
	cs, err := d.Client.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return []string{"list containers: " + err.Error()}
	}
	for _, c := range cs.Items {
		left = append(left, fmt.Sprintf("container %.12s (%s)", c.ID, c.State))
	}
	vs, err := d.Client.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return append(left, "list volumes: "+err.Error())
	}
	for _, v := range vs.Items {
		left = append(left, "volume "+v.Name)
	}
	for _, id := range containerIDs {
		if id == "" {
			continue
		}
		for _, p := range cgroupDirs(d.CgroupParent + "/" + id) {
			left = append(left, "cgroup "+p)
		}
	}
	return left
}
