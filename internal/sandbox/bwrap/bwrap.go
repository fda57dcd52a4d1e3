// Package bwrap is the sandbox backend that isolates with Linux namespaces through
// bubblewrap, and bounds, freezes and kills with cgroups.
//
// Each sandbox runs `agentd runtime` under bwrap as the unprivileged sandbox uid, with its own
// user (root inside mapped to that uid, every capability dropped, no further user namespaces),
// PID, mount, IPC, UTS and cgroup namespaces, and, unless its network is "host", its own
// network namespace, which slirp4netns connects to the internet for network "egress" (see
// egress.go). Its root is a tmpfs,
// read-only once set up, holding either the host's system directories (/usr, the /bin and
// /lib links, the parts of /etc programs need) or the top level of a rootfs directory, all
// read-only; a fresh /proc (its /proc/sys read-only), a minimal /dev, a private /tmp, the
// workspace at the spec's working directory (default /workspace; nosuid and nodev, owned by
// the sandbox uid on the host) and the runtime binary at /.agentd/agentd. The workspace and
// /tmp are the only writable places.
//
// On the host a sandbox lives in <Root>/<id>/: workspace/, runtime.sock (agentd reaches
// the runtime there, so it works with the network cut) and runtime.log. Its processes live in
// the cgroup <parent>/<id> of every hierarchy in use (see package cgroup), where parent is
// agentd/<12 hex digits naming Root>: the cgroup path is the label that tells this backend's
// sandboxes from anything else, including another agentd's. The first process of a sandbox
// is a small shell that moves itself into that cgroup and then execs bwrap through setpriv
// (which drops to the sandbox uid), so every process of the sandbox is born inside it; pause and resume freeze and thaw the cgroup, destroy
// kills everything in it.
//
// Sandboxes do not depend on agentd serve: they keep running when it stops, and a new Backend
// finds them again from the Instance or by List.
package bwrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// Name is the configuration name of this backend.
const Name = "bwrap"

// DefaultPath is the PATH given to sandboxes when Options.Path is empty.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Paths inside a sandbox.
const (
	// DefaultWorkspace is where the workspace is when the spec names no working directory.
	DefaultWorkspace = "/workspace"
	agentdDir        = "/.agentd"
	runtimeBinary    = agentdDir + "/agentd"
	socketName       = "runtime.sock"
	hostname         = "sandbox"
)

// shell runs the few lines that move a sandbox's first process into its cgroup.
const shell = "/bin/sh"

// DefaultUID is the host uid and gid of sandbox processes when Options.UID is zero.
const DefaultUID = 2000000000

// Descriptors a sandbox's first process inherits, as bwrap and the runtime are told them.
const (
	fdKey    = 3 // the session key, read by the runtime
	fdArgs   = 4 // bwrap's options
	fdListen = 5 // the runtime's listening socket
)

// Options configures a Backend.
type Options struct {
	// Root holds one directory per sandbox, e.g. <data>/sandboxes/bwrap. Created if missing.
	Root string
	// Binary is the agentd executable, mounted read-only into every sandbox; it replaces a
	// spec command's first element "agentd". It should be statically linked (CGO_ENABLED=0)
	// so that it runs on any rootfs.
	Binary string
	// Bwrap is the bubblewrap executable; empty means "bwrap" on PATH.
	Bwrap string
	// Path is the PATH sandboxes get; empty means DefaultPath. The server's own environment
	// is never passed on: it may hold LLM keys.
	Path string
	// CgroupParent is the cgroup path, relative to each hierarchy's root, that holds this
	// backend's sandboxes; empty means agentd/<12 hex digits of the SHA-256 of Root>, so that
	// two agentd servers on one machine never take each other's sandboxes for orphans.
	CgroupParent string
	// Cgroups is where the machine mounts its cgroup controllers; nil means cgroup.Detect.
	Cgroups *cgroup.Layout
	// CPUWeight is the CPU weight (cgroup v2's scale, the default being 100) of the group at
	// the top of CgroupParent ("agentd"), which holds every sandbox: under contention all
	// sandboxes together get that share of what the processes beside it (the control plane
	// among them) get each. Zero means DefaultCPUWeight.
	CPUWeight int
	// Slirp4netns is the slirp4netns executable that gives sandboxes with network egress
	// their connections out; empty means "slirp4netns" on PATH. Without it (or without the
	// tun device or iptables), such sandboxes cannot start, and CheckSpec says why.
	Slirp4netns string
	// UID is the unprivileged host uid (and gid) every sandbox process runs as; zero means
	// DefaultUID. Root inside a sandbox is this uid outside, so what a sandbox leaves in its
	// workspace belongs to it, never to root. It must not be 0.
	UID    int
	Logger *slog.Logger
}

// Backend runs sandboxes under bubblewrap. It is safe for concurrent use.
type Backend struct {
	root    hostproc.Root
	binary  string
	bwrap   string
	setpriv string
	uid     int
	// slirp is slirp4netns, or empty with egressErr saying why egress cannot be offered.
	slirp     string
	egressErr error
	path      string
	cgParent  string
	cg        *cgroup.Layout
	features  features
	// system is the bwrap arguments that mount the host's system directories.
	system []string
	log    *slog.Logger
	reaper *hostproc.Reaper
	// background runs the slow closes Start leaves behind; Close waits for them.
	background sync.WaitGroup
	// The freezer hold (FreezerHold) is taken once, at the first pause or resume, and
	// released at Close. holdDone: taken, tried in vain, or closed; no more attempts.
	holdMu   sync.Mutex
	holdDone bool
}

var _ sandbox.Backend = (*Backend)(nil)
var _ sandbox.SpecChecker = (*Backend)(nil)

// New checks opts, finds bwrap and the cgroup hierarchies, and creates Root. It starts
// nothing; Probe checks that sandboxes can start here.
func New(opts Options) (*Backend, error) {
	if opts.Root == "" {
		return nil, errors.New("new bwrap backend: no root directory")
	}
	if opts.Binary == "" {
		return nil, errors.New("new bwrap backend: no agentd binary")
	}
	root, err := hostproc.NewRoot(opts.Root, socketName)
	if err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	binary, err := filepath.Abs(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	if fi, err := os.Stat(binary); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("new bwrap backend: agentd binary %s is not a regular file", binary)
	}
	bw := opts.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	if bw, err = exec.LookPath(bw); err != nil {
		return nil, fmt.Errorf("new bwrap backend: bubblewrap is not installed: %w", err)
	}
	if _, err := os.Stat(shell); err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	if err := checkStageDir(); err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, fmt.Errorf("new bwrap backend: setpriv (util-linux), which starts sandboxes as an unprivileged uid, is not installed: %w", err)
	}
	uid := opts.UID
	if uid == 0 {
		uid = DefaultUID
	}
	if uid < 0 {
		return nil, fmt.Errorf("new bwrap backend: sandbox uid %d is not a uid", uid)
	}
	feats, err := detectFeatures(bw)
	if err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	cg := opts.Cgroups
	if cg == nil {
		if cg, err = cgroup.Detect(); err != nil {
			return nil, fmt.Errorf("new bwrap backend: %w", err)
		}
	}
	parent := opts.CgroupParent
	if parent == "" {
		parent = CgroupParentOf(root.Path)
	}
	if _, err := cg.Group(parent); err != nil {
		return nil, fmt.Errorf("new bwrap backend: %w", err)
	}
	if opts.CPUWeight <= 0 {
		opts.CPUWeight = DefaultCPUWeight
	}
	top, _, _ := strings.Cut(parent, "/")
	cg.WeighCPU(top, opts.CPUWeight)
	if err := os.MkdirAll(root.Path, 0o700); err != nil {
		return nil, fmt.Errorf("new bwrap backend: create root: %w", err)
	}
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	log := opts.Logger.With("backend", Name)
	slirp, egressErr := detectEgress(opts.Slirp4netns, uid)
	if egressErr != nil {
		log.Error("NO EGRESS NETWORK: sandboxes of specs with network egress (the default) cannot start; specs with network none can", "err", egressErr)
	}
	if !feats.disableUserns {
		log.Warn("this bubblewrap has no --disable-userns: commands in sandboxes can create user namespaces of their own", "bwrap", bw)
	}
	return &Backend{
		root: root, binary: binary, bwrap: bw, setpriv: setpriv, uid: uid, slirp: slirp, egressErr: egressErr,
		path: opts.Path, cgParent: parent, cg: cg,
		features: feats, system: systemArgs(), log: log, reaper: hostproc.NewReaper(log),
	}, nil
}

// DefaultCPUWeight is the CPU weight of all sandboxes together: a tenth of a process's beside
// them (cgroup v1 cpu.shares 102 against 1024), so that the control plane answers at once
// however busy the sandboxes are, while sandboxes still get every cycle nobody else wants.
const DefaultCPUWeight = 10

// CgroupParentOf is the cgroup parent of the sandboxes of a backend with root, when Options
// names none: agentd/<12 hex digits of the SHA-256 of root>.
func CgroupParentOf(root string) string {
	sum := sha256.Sum256([]byte(root))
	return "agentd/" + hex.EncodeToString(sum[:6])
}

// Name returns "bwrap".
func (b *Backend) Name() string { return Name }

// Capabilities: local, frozen by the cgroup freezer, with the limits of the cgroup
// controllers this machine mounts and the size of the private /tmp; no disk limit (the
// workspace is a host directory without a quota).
func (b *Backend) Capabilities() sandbox.Capabilities {
	missing := b.cg.Missing(cgroup.Limits{MemoryBytes: 1, CPUs: 1, PIDs: 1})
	return sandbox.Capabilities{Freeze: true, Pool: true, Limits: sandbox.LimitKinds{
		Memory: !slices.Contains(missing, cgroup.Memory),
		CPU:    !slices.Contains(missing, cgroup.CPU),
		PIDs:   !slices.Contains(missing, cgroup.PIDs),
		Tmp:    true,
	}}
}

// Close stops reaping the bwrap processes this value started; the sandboxes keep running,
// and whoever inherits their processes reaps them. It releases the freezer hold and, where no
// sandbox is left, removes the backend's cgroup parent, so that a data directory that is
// removed leaves no cgroup behind. Safe to call twice.
func (b *Backend) Close() error {
	b.reaper.Close()
	b.background.Wait()
	b.holdMu.Lock()
	b.holdDone = true
	// Also a hold a killed server left, should this one have paused nothing.
	if err := b.cg.ReleaseFreezer(b.FreezerHold()); err != nil {
		b.log.Warn("release the freezer hold", "err", err)
	}
	b.holdMu.Unlock()
	b.cg.Prune(b.cgParent)
	return nil
}

// FreezerHold is the cgroup path of the empty group the backend keeps frozen from its first
// pause or resume until Close (see cgroup.HoldFreezer): FreezerHoldOf its cgroup parent.
func (b *Backend) FreezerHold() string { return FreezerHoldOf(b.cgParent) }

// FreezerHoldOf is the freezer hold of the backend with cgroup parent parent: its sibling,
// "<parent>-freezer-hold", which no sandbox can be named and List, reading the parent's
// children, does not see.
func FreezerHoldOf(parent string) string { return parent + "-freezer-hold" }

// holdFreezer takes the freezer hold once. Failing to is only logged: pauses and resumes
// work without it, each a millisecond or so slower where the kernel switches its freezer.
func (b *Backend) holdFreezer(ctx context.Context) {
	b.holdMu.Lock()
	defer b.holdMu.Unlock()
	if b.holdDone {
		return
	}
	b.holdDone = true
	if err := b.cg.HoldFreezer(ctx, b.FreezerHold()); err != nil {
		b.log.Warn("pauses and resumes go without the freezer hold", "err", err)
	}
}

// CgroupParent is the cgroup path (relative to each hierarchy's root) of this backend's
// sandboxes.
func (b *Backend) CgroupParent() string { return b.cgParent }

// Cgroups is the cgroup layout the backend uses.
func (b *Backend) Cgroups() *cgroup.Layout { return b.cg }

// Group returns the cgroup of sandbox inst.
func (b *Backend) Group(inst sandbox.Instance) (*cgroup.Group, error) {
	st, _, err := decodeState(inst)
	if err != nil {
		return nil, err
	}
	return b.group(inst.ID, st)
}

// group returns the cgroup of sandbox id: the one recorded in st, or else the one this
// backend would give it. A recorded path must be an agentd sandbox's (below agentd/ or the
// backend's parent) and end in the id, so a damaged record cannot point Destroy at someone
// else's processes.
func (b *Backend) group(id string, st instanceState) (*cgroup.Group, error) {
	if _, err := b.dir(id); err != nil {
		return nil, err
	}
	rel := b.cgParent + "/" + id
	if st.Cgroup != "" {
		ours := strings.HasPrefix(st.Cgroup, "agentd/") || filepath.Dir(st.Cgroup) == b.cgParent
		if !ours || filepath.Base(st.Cgroup) != id {
			return nil, fmt.Errorf("recorded cgroup %q is not sandbox %s's", st.Cgroup, id)
		}
		rel = st.Cgroup
	}
	return b.cg.Group(rel)
}

// dir is the directory of sandbox id. The id is checked first: it ends up in RemoveAll.
func (b *Backend) dir(id string) (string, error) { return b.root.Dir(id) }

func hostWorkspace(dir string) string { return filepath.Join(dir, "workspace") }
func hostSocket(dir string) string    { return filepath.Join(dir, socketName) }
func logPath(dir string) string       { return filepath.Join(dir, "runtime.log") }

// Probe starts a throwaway sandbox of the default spec that runs `true` in a cgroup of its
// own, and reports why that failed, if it did: the check that bwrap and cgroups work here.
func (b *Backend) Probe(ctx context.Context) error {
	g, err := b.cg.Group(b.cgParent + "/probe-" + sandboxNonce())
	if err != nil {
		return fmt.Errorf("probe bwrap: %w", err)
	}
	if err := g.Create(cgroup.Limits{}); err != nil {
		return fmt.Errorf("probe bwrap: %w", err)
	}
	defer func() {
		if err := g.Destroy(context.WithoutCancel(ctx)); err != nil {
			b.log.Error("remove probe cgroup", "cgroup", g.Path(), "err", err)
		}
	}()
	cmd := b.BareCommand(g, "true")
	stop := context.AfterFunc(ctx, func() { _ = g.Destroy(context.WithoutCancel(ctx)) })
	defer stop()
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		// Its cgroup was destroyed under it: the probe ran out of time.
		return fmt.Errorf("probe bwrap: a sandbox running true did not end in time (%w); the machine may be too busy", context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("probe bwrap: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
