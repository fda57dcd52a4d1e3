// Package podinit is what a kubernetes sandbox's init container runs (`agentd sandbox-init`,
// a command of both builds) before the sandbox's own container starts: it copies the runtime
// out of agentd's image into the volume the sandbox's container shares with it, so that the
// runtime runs in any image (the runtime-only build that the agentd executable it runs from
// carries, or that executable when it carries none); it gives the workspace to the sandbox
// uid; and it writes the pod's egress rules into the pod's network namespace with nftables,
// which every container of the pod shares, so that they hold whatever the cluster's network
// plugin is and before any command of the sandbox runs.
//
// The init container runs as root with CAP_NET_ADMIN (for the rules) and CAP_CHOWN (for the
// workspace) and nothing else; the sandbox's container never gets CAP_NET_ADMIN, so nothing in
// the sandbox can change the rules.
package podinit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimebuild"
)

// Flags of `agentd sandbox-init`, which the backend writes into the init container's command.
const (
	FlagCopyTo    = "copy-to"
	FlagWorkspace = "workspace"
	FlagUID       = "uid"
	FlagNetwork   = "network"
	FlagDeny      = "deny"
	FlagDenyEnv   = "deny-env"
)

// Network modes, as the sandbox spec names them.
const (
	NetworkEgress = "egress"
	NetworkNone   = "none"
)

// Options are what one run does.
type Options struct {
	// CopyTo is where the runtime is copied (mode 0755): the runtime-only build the running
	// executable carries, else the executable itself. Empty copies nothing.
	CopyTo string
	// Workspace, with UID, is the workspace directory to give to that uid and gid.
	Workspace string
	UID       int
	// Network is NetworkEgress or NetworkNone; empty sets no rules (network "host").
	Network string
	// Deny are the prefixes new connections may not go to in egress mode (the cluster's
	// ranges, the node, metadata), but for DNS to Resolvers.
	Deny []netip.Prefix
	// Resolvers are the name servers the pod is given (its resolv.conf's), reached on port
	// 53 even inside Deny.
	Resolvers []netip.Addr

	netnsFD int // the network namespace of the rules, for tests; 0 means this process's
}

// Main is the body of `agentd sandbox-init`: args are the arguments after the command's
// name, getenv reads the environment (for --deny-env: the node's address comes from the
// downward API, as an environment variable).
func Main(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentd sandbox-init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	var deny, denyEnv string
	fs.StringVar(&opts.CopyTo, FlagCopyTo, "", "copy the runtime (the runtime-only build this executable carries, or this executable) to this path")
	fs.StringVar(&opts.Workspace, FlagWorkspace, "", "give this directory to --uid")
	fs.IntVar(&opts.UID, FlagUID, 0, "the sandbox uid (and gid)")
	fs.StringVar(&opts.Network, FlagNetwork, "", "egress or none: the pod's outbound rules")
	fs.StringVar(&deny, FlagDeny, "", "comma-separated prefixes egress may not reach")
	fs.StringVar(&denyEnv, FlagDenyEnv, "", "comma-separated environment variables holding more addresses to deny")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sandbox-init: unexpected arguments %q", fs.Args())
	}
	var err error
	if opts.Deny, err = parsePrefixes(deny); err != nil {
		return fmt.Errorf("sandbox-init: --%s: %w", FlagDeny, err)
	}
	for name := range strings.SplitSeq(denyEnv, ",") {
		if name == "" {
			continue
		}
		for v := range strings.SplitSeq(getenv(name), ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			a, err := netip.ParseAddr(v)
			if err != nil {
				return fmt.Errorf("sandbox-init: %s: %w", name, err)
			}
			opts.Deny = append(opts.Deny, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	if opts.Network != "" {
		if opts.Resolvers, err = resolvers("/etc/resolv.conf"); err != nil {
			return fmt.Errorf("sandbox-init: %w", err)
		}
	}
	return Run(opts)
}

// Run does what opts say, in order: the copy, the workspace, the rules.
func Run(opts Options) error {
	if opts.CopyTo != "" {
		if err := copyRuntime("/proc/self/exe", opts.CopyTo); err != nil {
			return fmt.Errorf("sandbox-init: copy agentd: %w", err)
		}
	}
	if opts.Workspace != "" {
		if opts.UID <= 0 {
			return errors.New("sandbox-init: --workspace needs --uid")
		}
		if err := os.MkdirAll(opts.Workspace, 0o755); err != nil {
			return fmt.Errorf("sandbox-init: %w", err)
		}
		if err := os.Chown(opts.Workspace, opts.UID, opts.UID); err != nil {
			return fmt.Errorf("sandbox-init: give the workspace to uid %d: %w", opts.UID, err)
		}
	}
	switch opts.Network {
	case "":
	case NetworkEgress, NetworkNone:
		if err := applyRules(opts); err != nil {
			return fmt.Errorf("sandbox-init: network %s: %w", opts.Network, err)
		}
	default:
		return fmt.Errorf("sandbox-init: unknown network %q", opts.Network)
	}
	return nil
}

// copyRuntime copies the runtime-only build that the executable exe carries to dst (checked
// against its hash), or exe itself when it carries none, through a temporary file renamed
// into place, so that a container never starts a half-written binary.
func copyRuntime(exe, dst string) error {
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	var (
		r    io.Reader = src
		want string
	)
	off, size, sum, err := runtimebuild.Locate(src)
	switch {
	case errors.Is(err, runtimebuild.ErrNotPacked):
	case err != nil:
		return err
	default:
		r, want = io.NewSectionReader(src, off, size), sum
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".agentd-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil {
		tmp.Close()
		return err
	}
	if want != "" && hex.EncodeToString(h.Sum(nil)) != want {
		tmp.Close()
		return errors.New("the packed runtime build does not match its hash: the executable is damaged")
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := ParsePrefix(v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix reads a prefix ("10.0.0.0/8") or a single address ("10.201.0.1", a /32 or
// /128), masked.
func ParsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// resolvers reads the name servers of a resolv.conf.
func resolvers(path string) ([]netip.Addr, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}

// FormatPrefixes joins prefixes for --deny.
func FormatPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
