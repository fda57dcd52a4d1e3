// Package docker is the sandbox backend on the Docker Engine API: each sandbox is a container
// of the spec's image running `agentd runtime`, with a named volume as its workspace.
//
// It talks to the engine through the official Go client only. The engine must run on this
// machine: a sandbox also has a directory on the host, <Root>/<id>/, bind-mounted into its
// container at /.agentd/run. The runtime listens on a unix socket there, so the control plane
// reaches it with no published port and with the network cut off, and it reads its session key
// from a file there, which it deletes before it serves (Docker cannot hand a container a file
// descriptor, and an environment variable would show in `docker inspect`). The agentd binary,
// statically linked, is bind-mounted read-only at /.agentd/agentd, so it runs in any image.
//
// A container runs as root, whatever user its image names, with no capability but CAP_SETUID,
// CAP_SETGID, CAP_KILL and CAP_SETPCAP, and no-new-privileges; Docker's init is its PID 1, so
// that orphaned commands are reaped. Init and the runtime hold the container's output (docker
// logs), which, being root's, the commands cannot reach through /proc. The runtime, started
// with --sandbox-uid, reads its key from the run directory and makes its socket there, both
// root's and closed to the commands, then empties the bounding set, keeps CAP_SETUID,
// CAP_SETGID and CAP_KILL, and works on files as the unprivileged sandbox uid and gid
// (Options.UID); every command it starts runs as that uid with no capability, so no setuid
// file gives a command more. agentd gives that uid the workspace volume's directory on the
// host, so what the sandbox writes to its workspace belongs to it (user-namespace remapping
// is not supported). /proc is Docker's: the commands see the runtime's and init's entries,
// though not into them, as hiding them (hidepid) would take CAP_SYS_ADMIN. Network egress is
// a bridge network of the backend's own that firewall rules keep off the host (see
// network.go); none is Docker's none.
// Containers and volumes carry labels that say they are agentd's, which sandbox and owner they
// belong to (none, for a sandbox started for a warm pool: labels cannot change, so a claimed
// one keeps an empty owner; the store records it), and which agentd (by its Root) manages them, so that two servers sharing an engine
// never take each other's sandboxes for orphans. The container id is the Instance's state;
// List finds the rest by label after a restart of agentd.
//
// The image must be on the engine already: Start does not pull, since a pull can outlast any
// start timeout and reach registries nobody chose. Pause and resume are Docker's (the cgroup
// freezer); Destroy removes the container, its volume and its directory.
package docker

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// Name is the configuration name of this backend.
const Name = "docker"

// DefaultHost is the engine address used when Options.Host is empty, as in the DOCKER_HOST
// convention.
const DefaultHost = "unix:///var/run/docker.sock"

// Paths inside a sandbox's container.
const (
	binaryInContainer = "/.agentd/agentd"
	runInContainer    = "/.agentd/run"
	defaultWorkingDir = "/workspace"
)

// Labels on every container and volume the backend creates.
const (
	labelManaged  = "agentd.managed"  // "true"
	labelInstance = "agentd.instance" // which agentd manages it: a hash of Root
	labelSandbox  = "agentd.sandbox"  // the sandbox id
	labelOwner    = "agentd.owner"    // the sandbox owner's user id
)

// socketName is the runtime's socket in a sandbox directory.
const socketName = "runtime.sock"

// Options configures a Backend.
type Options struct {
	// Host is the engine's address in the DOCKER_HOST form ("unix:///var/run/docker.sock");
	// empty means DefaultHost. The engine must run on this machine (see the package comment).
	Host string
	// Root holds one directory per sandbox, e.g. <data>/sandboxes/docker. Created if missing.
	Root string
	// Binary is the agentd executable, statically linked; it replaces a spec command's first
	// element "agentd".
	Binary string
	// UID is the unprivileged uid (and gid) the commands of a container run as; zero means
	// DefaultUID. It must not be 0.
	UID    int
	Logger *slog.Logger
}

// DefaultUID is the uid and gid of the commands when Options.UID is zero.
const DefaultUID = 2000000000

// Backend runs sandboxes as Docker containers. It is safe for concurrent use.
type Backend struct {
	cli      *client.Client
	root     hostproc.Root
	binary   string
	uid      int
	instance string // the labelInstance value of this backend's sandboxes
	log      *slog.Logger
	netMu    sync.Mutex // serialises the making and removing of the egress network
}

var _ sandbox.Backend = (*Backend)(nil)

// New checks opts, creates Root and makes a client for the engine. It does not contact the
// engine: a server may start while its engine is still coming up.
func New(opts Options) (*Backend, error) {
	if opts.Root == "" {
		return nil, errors.New("new docker backend: no root directory")
	}
	if opts.Binary == "" {
		return nil, errors.New("new docker backend: no agentd binary")
	}
	root, err := hostproc.NewRoot(opts.Root, socketName)
	if err != nil {
		return nil, fmt.Errorf("new docker backend: %w", err)
	}
	binary, err := filepath.Abs(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("new docker backend: %w", err)
	}
	if err := checkStatic(binary); err != nil {
		return nil, fmt.Errorf("new docker backend: %w", err)
	}
	if err := os.MkdirAll(root.Path, 0o700); err != nil {
		return nil, fmt.Errorf("new docker backend: create root: %w", err)
	}
	host := opts.Host
	if host == "" {
		host = DefaultHost
	}
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return nil, fmt.Errorf("new docker backend: engine address %q: %w", host, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.UID == 0 {
		opts.UID = DefaultUID
	}
	if opts.UID < 0 {
		return nil, fmt.Errorf("new docker backend: sandbox uid %d is not a uid", opts.UID)
	}
	sum := sha256.Sum256([]byte(root.Path))
	return &Backend{
		cli:      cli,
		root:     root,
		binary:   binary,
		uid:      opts.UID,
		instance: hex.EncodeToString(sum[:8]),
		log:      opts.Logger.With("backend", Name),
	}, nil
}

// checkStatic refuses a dynamically linked binary: it would not run in an image that lacks
// its libraries.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agentd binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agentd binary %s is dynamically linked; the docker backend mounts it into images that may lack its libraries: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// Name returns "docker".
func (b *Backend) Name() string { return Name }

// Capabilities: local (the engine bind-mounts directories of this machine), frozen by the
// engine's pause, with the engine's memory, CPU and process limits and the size of /tmp; no
// disk limit.
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Freeze: true, Pool: true, Limits: sandbox.LimitKinds{Memory: true, CPU: true, PIDs: true, Tmp: true}}
}

// Close removes the egress network when no sandbox is left (so a removed data directory
// leaves neither a network nor firewall rules behind), and closes the engine client's
// connections; sandboxes keep running. Safe to call twice.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := b.pruneNetwork(ctx); err != nil {
		b.log.Warn("remove the egress network", "err", err)
	}
	return b.cli.Close()
}

// closeTimeout bounds Close's look at the engine.
const closeTimeout = 30 * time.Second

// dir is the host directory of sandbox id. The id is checked first: it ends up in RemoveAll
// and in container and volume names.
func (b *Backend) dir(id string) (string, error) {
	if !validID(id) {
		return "", errInvalidID(id)
	}
	return b.root.Dir(id)
}

func errInvalidID(id string) error {
	return fmt.Errorf("sandbox id %q is not a valid path element and container name", id)
}

// validID accepts what is both a path element and part of a container name: letters, digits,
// '_', '.', '-', starting with a letter or digit.
func validID(id string) bool {
	if id == "" {
		return false
	}
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '_' || r == '.' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// labels are the labels of sandbox id's container and volume.
func (b *Backend) labels(id, owner string) map[string]string {
	return map[string]string{labelManaged: "true", labelInstance: b.instance, labelSandbox: id, labelOwner: owner}
}

// filters select this backend's objects; with an id, only that sandbox's.
func (b *Backend) filters(id string) client.Filters {
	f := client.Filters{}.Add("label", labelManaged+"=true", labelInstance+"="+b.instance)
	if id != "" {
		f.Add("label", labelSandbox+"="+id)
	}
	return f
}

func containerName(id string) string { return "agentd-" + id }
func volumeName(id string) string    { return "agentd-" + id + "-workspace" }
func socketPath(dir string) string   { return filepath.Join(dir, socketName) }
func keyPath(dir string) string      { return filepath.Join(dir, "key") }
func endpoint(dir string) string     { return "unix:" + socketPath(dir) }
