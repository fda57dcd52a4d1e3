package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/firewall"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// The egress network of a sandbox is slirp4netns: a user-space TCP/IP stack that owns the
// sandbox's network namespace through a tap device and makes the sandbox's connections
// with ordinary sockets of its own on the host. It runs as the sandbox uid, in the sandbox's
// cgroup (so it is frozen, limited and killed with the sandbox), and ends when bwrap does.
// With --disable-host-loopback it refuses the sandbox the host's loopback through its
// gateway address; the firewall (package firewall) refuses its sockets the host's own
// addresses and link-local ones. slirp4netns rather than pasta: Debian's slirp4netns is a
// stable release whose defaults forward no port, where Debian 12's pasta is an early snapshot
// that forwards every port bound on either side unless told not to.

// Descriptors of a sandbox's first process, beyond fdKey, fdArgs and fdListen, when its
// network is egress.
const (
	fdInfo    = 6 // bwrap writes the pid of the sandbox's first process here
	fdSync    = 7 // held by bwrap while the sandbox runs; its end stops slirp4netns
	fdResolve = 8 // the sandbox's /etc/resolv.conf
)

// Descriptors of slirp4netns.
const (
	fdSlirpExit   = 3 // closed when bwrap ends (the other end of fdSync)
	fdSlirpReady  = 4 // slirp4netns writes "1" once the interface is configured
	fdSlirpUserNS = 5 // the user namespace that owns the sandbox's network namespace
	fdSlirpNetNS  = 6 // the sandbox's network namespace
)

// slirpDNS is the resolver slirp4netns offers the sandbox: it forwards to the host's, which
// may sit on the host's loopback where the sandbox cannot reach it.
const slirpDNS = "10.0.2.3"

// tunDevice is the device slirp4netns opens in the sandbox's network namespace.
const tunDevice = "/dev/net/tun"

// detectEgress finds slirp4netns (path, or on PATH) and the tun device, and puts the firewall
// rules of uid in place. The error says why sandboxes with egress cannot start here.
func detectEgress(path string, uid int) (string, error) {
	if path == "" {
		path = "slirp4netns"
	}
	slirp, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("slirp4netns is not installed (Debian: apt-get install slirp4netns): %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(tunDevice, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return "", fmt.Errorf("the tun device %s is missing (load the tun module): %v", tunDevice, err)
	}
	if err := firewall.GuardUID(uid); err != nil {
		return "", fmt.Errorf("the firewall rules that keep egress sandboxes off the host's addresses could not be added: %w", err)
	}
	return slirp, nil
}

// egressFiles are what bwrap gets for a sandbox with egress: fdInfo, fdSync and fdResolve,
// and what Start keeps of them.
type egressFiles struct {
	infoR, infoW *os.File
	exitR, syncW *os.File
	resolv       *os.File
}

func newEgressFiles() (_ *egressFiles, err error) {
	e := &egressFiles{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.infoR, e.infoW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if e.exitR, e.syncW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	fd, err := unix.MemfdCreate("resolv.conf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	e.resolv = os.NewFile(uintptr(fd), "resolv.conf")
	if _, err := io.WriteString(e.resolv, "nameserver "+slirpDNS+"\n"); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if _, err := e.resolv.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	return e, nil
}

// bwrapFiles are the descriptors bwrap inherits at fdInfo, fdSync and fdResolve.
func (e *egressFiles) bwrapFiles() []*os.File { return []*os.File{e.infoW, e.syncW, e.resolv} }

// started closes what only bwrap needed, once it runs.
func (e *egressFiles) started() {
	e.infoW.Close()
	e.syncW.Close()
	e.resolv.Close()
}

// Close closes everything.
func (e *egressFiles) Close() {
	for _, f := range []*os.File{e.infoR, e.infoW, e.exitR, e.syncW, e.resolv} {
		if f != nil {
			f.Close()
		}
	}
}

// egressArgs are bwrap's options for a sandbox with egress: the descriptors above, and the
// resolver slirp4netns offers.
func egressArgs() []string {
	return []string{
		"--info-fd", strconv.Itoa(fdInfo),
		"--sync-fd", strconv.Itoa(fdSync),
		"--ro-bind-data", strconv.Itoa(fdResolve), "/etc/resolv.conf",
	}
}

// childPID reads the pid of the sandbox's first process from bwrap's info descriptor.
func childPID(r *os.File, deadline time.Time) (int, error) {
	_ = r.SetReadDeadline(deadline)
	var buf bytes.Buffer
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	chunk := make([]byte, 512)
	for {
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if json.Unmarshal(buf.Bytes(), &info) == nil && info.ChildPID > 0 {
			return info.ChildPID, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read the sandbox's pid from bwrap: %w", err)
		}
	}
}

// startSlirp starts slirp4netns for the network namespace of process pid, in cgroup g (none
// when nil), as the sandbox uid, records its first process in st, and waits until it has
// configured the sandbox's interface. Its output goes to log (nowhere when nil).
func (b *Backend) startSlirp(ctx context.Context, g *cgroup.Group, pid int, e *egressFiles, log io.Writer, st *instanceState) error {
	netNS, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return fmt.Errorf("open the sandbox's network namespace: %w", err)
	}
	defer netNS.Close()
	// The namespace belongs to the user namespace bwrap made first; slirp4netns must join that
	// one (the sandbox's processes may sit in one nested below it) to configure the network.
	fd, err := unix.IoctlRetInt(int(netNS.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return fmt.Errorf("find the owner of the sandbox's network namespace: %w", err)
	}
	userNS := os.NewFile(uintptr(fd), "userns")
	defer userNS.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("slirp4netns: %w", err)
	}
	defer readyR.Close()
	argv := b.asSandboxUser([]string{b.slirp,
		"--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp",
		"--exit-fd=" + strconv.Itoa(fdSlirpExit), "--ready-fd=" + strconv.Itoa(fdSlirpReady),
		"--userns-path=/proc/self/fd/" + strconv.Itoa(fdSlirpUserNS),
		"--netns-type=path", "/proc/self/fd/" + strconv.Itoa(fdSlirpNetNS), "tap0"})
	if g != nil {
		argv = append([]string{shell}, joinArgs(g, argv)...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + b.path}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{e.exitR, readyW, userNS, netNS}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// slirp4netns opens the tun device once in the sandbox's user namespace, where the
	// host's root-owned node may not be open to the sandbox uid: it gets a node of its own.
	err = startStaged(cmd, stage{tun: true})
	readyW.Close()
	if err != nil {
		return fmt.Errorf("start slirp4netns: %w", err)
	}
	st.SlirpPID = cmd.Process.Pid
	if p, err := hostproc.ReadStat(st.SlirpPID); err == nil {
		st.SlirpStartTime = p.StartTime
	}
	b.reaper.Watch(cmd)
	_ = readyR.SetReadDeadline(waitDeadline(ctx))
	var one [1]byte
	if _, err := io.ReadFull(readyR, one[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("slirp4netns exited before the network was up")
		}
		return fmt.Errorf("wait for slirp4netns: %w", err)
	}
	return nil
}

// fdBlock is where BareRun's bwrap waits for the network before it runs its command.
const fdBlock = 9

// BareRun runs argv under bwrap with the namespaces and mounts of a sandbox of the default
// spec and the given network, set up as a sandbox's is (with egress, slirp4netns has
// configured the interface before argv runs), but without a workspace, a runtime or a
// cgroup: the floor a sandbox start is measured against. It returns when argv has ended.
func (b *Backend) BareRun(ctx context.Context, network string, argv ...string) error {
	args := append(b.namespaceArgs(network), b.system...)
	args = append(args, b.kernelArgs(0)...)
	var e *egressFiles
	var blockR, blockW *os.File
	if network == sandbox.NetworkEgress {
		if b.egressErr != nil {
			return b.egressErr
		}
		var err error
		if e, err = newEgressFiles(); err != nil {
			return err
		}
		defer e.Close()
		if blockR, blockW, err = os.Pipe(); err != nil {
			return err
		}
		defer blockR.Close()
		defer blockW.Close()
		args = append(args, egressArgs()...)
		args = append(args, "--block-fd", strconv.Itoa(fdBlock))
	}
	args = append(args, "--remount-ro", "/", "--chdir", "/", "--")
	argv = b.asSandboxUser(append([]string{b.bwrap}, append(args, argv...)...))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + b.path}
	cmd.Dir = "/"
	if e != nil {
		// fdKey, fdArgs and fdListen stay closed; then fdInfo, fdSync, fdResolve and fdBlock.
		cmd.ExtraFiles = append([]*os.File{nil, nil, nil}, append(e.bwrapFiles(), blockR)...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	if e != nil {
		e.started()
		blockR.Close()
		err := func() error {
			pid, err := childPID(e.infoR, waitDeadline(ctx))
			if err != nil {
				return err
			}
			if err := waitBlocked(ctx, pid, fdBlock); err != nil {
				return err
			}
			var st instanceState
			if err := b.startSlirp(ctx, nil, pid, e, nil, &st); err != nil {
				return err
			}
			_, err = blockW.Write([]byte{1})
			return err
		}()
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("bare bwrap with egress: %w: %s", err, bytes.TrimSpace(out.Bytes()))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("bare bwrap: %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// waitBlocked waits until process pid reads descriptor fd, as bwrap's first process does with
// --block-fd once it has set the sandbox up (its loopback among it).
func waitBlocked(ctx context.Context, pid, fd int) error {
	want := fmt.Sprintf("%d 0x%x ", unix.SYS_READ, fd)
	path := "/proc/" + strconv.Itoa(pid) + "/syscall"
	begin, deadline := time.Now(), waitDeadline(ctx)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("wait for bwrap's set-up: %w", err)
		}
		if bytes.HasPrefix(b, []byte(want)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bwrap did not finish its set-up within %v (%s: %q)", time.Since(begin).Round(time.Millisecond), path, bytes.TrimSpace(b))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(delay)
	}
}
