package bwrap

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
)

// features are the bwrap options that not every bubblewrap release has.
type features struct {
	disableUserns bool // --disable-userns (0.8.0)
	size          bool // --size for --tmpfs (0.8.0)
}

// detectFeatures reads bwrap's --help.
func detectFeatures(bwrap string) (features, error) {
	out, err := exec.Command(bwrap, "--help").Output()
	if err != nil {
		return features{}, fmt.Errorf("run %s --help: %w", bwrap, err)
	}
	return features{
		disableUserns: bytes.Contains(out, []byte("--disable-userns")),
		size:          bytes.Contains(out, []byte("--size")),
	}, nil
}

// systemDirs are the host directories a sandbox without a rootfs sees, read-only. Where one
// is a symbolic link (merged /usr), the sandbox gets the same link.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries are the parts of the host's /etc a sandbox without a rootfs sees, read-only:
// what the C library, name resolution, TLS, git and Debian's alternatives need. The rest of
// /etc (shadow, ssh host keys, ssl/private, ...) stays out: the sandbox's root is the agentd
// user, which can read files that user owns. Each entry is a mount, which costs bwrap about
// 0.15 ms, so the list is short; shells' start-up files are left out, as the runtime's shells
// are not login shells.
var etcEntries = []string{
	"alternatives", "debian_version", "gai.conf", "gitconfig", "group", "host.conf", "hosts",
	"ld.so.cache", "localtime", "mime.types", "nsswitch.conf", "os-release", "passwd",
	"protocols", "resolv.conf", "services", "ssl/certs", "ssl/openssl.cnf", "timezone",
}

// systemArgs mounts the host's system directories and the chosen parts of /etc.
func systemArgs() []string {
	var args []string
	for _, p := range systemDirs {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(p); err == nil {
				args = append(args, "--symlink", target, p)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, e := range etcEntries {
		p := "/etc/" + e
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		// A link into /usr (os-release, localtime) works as it is, and costs no mount.
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(resolved, "/usr/") {
			args = append(args, "--symlink", target, p)
			continue
		}
		// Other links are followed (resolv.conf often points into /run); -try, because a
		// file may go away after start-up.
		args = append(args, "--ro-bind-try", p, p)
	}
	return args
}

// reserved are the top-level names bwrap mounts itself; a rootfs's own are not used.
var reserved = []string{"proc", "dev", "tmp", strings.TrimPrefix(agentdDir, "/")}

// rootfsArgs mounts the top level of rootfs read-only, entry by entry, onto the sandbox's
// tmpfs root, so bwrap can still create its own mount points (/.agentd, the workspace) there.
// bwrap finds rootfs at staged.
func rootfsArgs(rootfs, staged string) ([]string, error) {
	entries, err := os.ReadDir(rootfs)
	if err != nil {
		return nil, fmt.Errorf("read rootfs: %w", err)
	}
	var args []string
	for _, e := range entries {
		if slices.Contains(reserved, e.Name()) {
			continue
		}
		src, dst := filepath.Join(rootfs, e.Name()), "/"+e.Name()
		if e.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				return nil, fmt.Errorf("read rootfs: %w", err)
			}
			args = append(args, "--symlink", target, dst)
			continue
		}
		args = append(args, "--ro-bind", filepath.Join(staged, e.Name()), dst)
	}
	return args, nil
}

// namespaceArgs are the namespaces and privileges of every sandbox.
func (b *Backend) namespaceArgs(network string) []string {
	// Root inside the sandbox is the sandbox uid outside: bwrap runs as that uid (see
	// asSandboxUser), and an unprivileged bwrap maps its own uid and no other.
	args := []string{"--unshare-user", "--uid", "0", "--gid", "0"}
	if b.features.disableUserns {
		args = append(args, "--disable-userns")
	}
	args = append(args, "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--unshare-cgroup", "--hostname", hostname, "--new-session")
	if network != sandbox.NetworkHost {
		// A namespace of its own with only loopback, to which slirp4netns adds the egress
		// network's interface.
		args = append(args, "--unshare-net")
	}
	return args
}

// kernelArgs mount /proc (with /proc/sys read-only: bwrap leaves it writable inside a user
// namespace, and the sandbox's root could otherwise set the host's sysctls), /dev and /tmp.
func (b *Backend) kernelArgs(tmpSize int64) []string {
	args := []string{"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"}
	if tmpSize > 0 && b.features.size {
		args = append(args, "--size", strconv.FormatInt(tmpSize, 10))
	}
	return append(args, "--tmpfs", "/tmp")
}

// tmpSize is the size of a sandbox's /tmp: the spec's, or else half its memory limit. tmpfs
// pages count against the memory limit but belong to no process the OOM killer could pick:
// a full /tmp would make it kill the runtime, so without a size of its own half the limit
// leaves room.
func tmpSize(l sandbox.Limits) int64 {
	if l.TmpBytes > 0 {
		return l.TmpBytes
	}
	return l.MemoryBytes / 2
}

// sandboxArgs are bwrap's options for sandbox dir with workspace ws (inside), up to and
// not including the "--" before the command.
func (b *Backend) sandboxArgs(dir, ws string, spec sandbox.Spec) ([]string, error) {
	args := b.namespaceArgs(sandbox.NetworkOf(spec))
	if spec.Rootfs == "" {
		args = append(args, b.system...)
	} else {
		rargs, err := rootfsArgs(spec.Rootfs, stagedRootfs)
		if err != nil {
			return nil, err
		}
		args = append(args, rargs...)
	}
	args = append(args, b.kernelArgs(tmpSize(spec.Limits))...)
	if sandbox.NetworkOf(spec) == sandbox.NetworkEgress {
		args = append(args, egressArgs()...)
	}
	// The workspace and the binary are bound where the sandbox's first process finds them
	// staged (see stage.go). bwrap mounts every bind nosuid and nodev.
	args = append(args,
		"--bind", stagedWorkspace, ws,
		"--ro-bind", stagedBinary, runtimeBinary,
		"--remount-ro", "/",
		"--chdir", ws)
	return args, nil
}

// BareCommand returns bwrap running argv with the namespaces and mounts of a sandbox of the
// default spec (host system directories, network on), but no workspace or runtime: the floor
// a sandbox is measured against, and what Probe runs. With g not nil the command moves
// itself into cgroup g first, as a sandbox's first process does.
func (b *Backend) BareCommand(g *cgroup.Group, argv ...string) *exec.Cmd {
	args := append(b.namespaceArgs(sandbox.NetworkHost), b.system...)
	args = append(args, b.kernelArgs(0)...)
	args = append(args, "--remount-ro", "/", "--chdir", "/", "--")
	args = b.asSandboxUser(append([]string{b.bwrap}, append(args, argv...)...))
	if g != nil {
		args = append([]string{shell}, joinArgs(g, args)...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=" + b.path}
	cmd.Dir = "/"
	return cmd
}

// asSandboxUser returns argv run as the sandbox uid and gid, with no supplementary groups
// and no way back to privileges: the last step before bwrap, after the cgroup join that
// needs root.
func (b *Backend) asSandboxUser(argv []string) []string {
	id := strconv.Itoa(b.uid)
	return append([]string{b.setpriv, "--reuid", id, "--regid", id, "--clear-groups", "--no-new-privs", "--"}, argv...)
}

// joinScript is run by /bin/sh as a sandbox's first process: it moves itself into the
// sandbox's cgroups by writing 0 to each file named before "--" (see cgroup.JoinFiles), then
// becomes the command after it. Everything the command starts is therefore born in them.
const joinScript = `while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"`

// joinArgs are the arguments of /bin/sh that run argv in cgroup g.
func joinArgs(g *cgroup.Group, argv []string) []string {
	args := []string{"-c", joinScript, "agentd-cgroup-join"}
	args = append(args, g.JoinFiles()...)
	args = append(args, "--")
	return append(args, argv...)
}

// env is the runtime's whole environment. The server's own environment is not passed on.
func (b *Backend) env(ws string, spec sandbox.Spec) []string {
	env := []string{
		"PATH=" + b.path,
		"HOME=" + ws,
		"LANG=C.UTF-8",
		"TERM=xterm-256color",
	}
	for _, k := range slices.Sorted(maps.Keys(spec.InitialEnv)) {
		env = append(env, k+"="+spec.InitialEnv[k])
	}
	return env
}

// sandboxNonce is a random suffix for throwaway names.
func sandboxNonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
