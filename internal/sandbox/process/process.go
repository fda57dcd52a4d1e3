// Package process is the sandbox backend without isolation: each sandbox is an `agentd runtime`
// process in a session of its own, with a workspace directory on the host. It is meant for
// development and for machines without bubblewrap or Docker; commands in such a sandbox can do
// whatever the agentd user can.
//
// A sandbox lives in <Root>/<id>/: the workspace/ directory, the runtime's socket runtime.sock
// and its log runtime.log. The runtime is a session leader, so every process it starts shares
// its session id, which is how Pause, Resume and Destroy find them all (a process that starts
// a session of its own escapes them; this backend does not isolate). The runtime does not
// depend on agentd serve: it keeps running when serve stops or crashes, and a new Backend
// finds it again from the Instance (pid and start time) or by List.
package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// Name is the configuration name of this backend.
const Name = "process"

// DefaultPath is the PATH given to sandboxes when Options.Path is empty.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// socketName is the runtime's socket in a sandbox directory.
const socketName = "runtime.sock"

// Options configures a Backend.
type Options struct {
	// Root holds one directory per sandbox, e.g. <data>/sandboxes/process. Created if missing.
	Root string
	// Binary is the agentd executable, which must exist; it replaces a spec command's first
	// element "agentd".
	Binary string
	// Path is the PATH sandboxes get; empty means DefaultPath. The server's own environment
	// is never passed on: it may hold LLM keys.
	Path   string
	Logger *slog.Logger
}

// Backend runs sandboxes as plain processes. It is safe for concurrent use.
type Backend struct {
	root   hostproc.Root
	binary string
	path   string
	log    *slog.Logger
	reaper *hostproc.Reaper
}

var _ sandbox.Backend = (*Backend)(nil)

// New checks opts (Binary must exist) and creates Root.
func New(opts Options) (*Backend, error) {
	if opts.Root == "" {
		return nil, errors.New("new process backend: no root directory")
	}
	if opts.Binary == "" {
		return nil, errors.New("new process backend: no agentd binary")
	}
	root, err := hostproc.NewRoot(opts.Root, socketName)
	if err != nil {
		return nil, fmt.Errorf("new process backend: %w", err)
	}
	if fi, err := os.Stat(opts.Binary); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("new process backend: agentd binary %s is not a regular file", opts.Binary)
	}
	if err := os.MkdirAll(root.Path, 0o700); err != nil {
		return nil, fmt.Errorf("new process backend: create root: %w", err)
	}
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	log := opts.Logger.With("backend", Name)
	return &Backend{root: root, binary: opts.Binary, path: opts.Path, log: log, reaper: hostproc.NewReaper(log)}, nil
}

// Name returns "process".
func (b *Backend) Name() string { return Name }

// Capabilities: local, frozen by stopping the runtime's session, and no limit at all.
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Freeze: true, Pool: true}
}

// Close stops reaping the runtimes this value started; they keep running, and whoever
// inherits them reaps them. Safe to call twice.
func (b *Backend) Close() error {
	b.reaper.Close()
	return nil
}

// dir is the directory of sandbox id. The id is checked first: it ends up in RemoveAll.
func (b *Backend) dir(id string) (string, error) { return b.root.Dir(id) }

func socketPath(dir string) string    { return filepath.Join(dir, socketName) }
func workspacePath(dir string) string { return filepath.Join(dir, "workspace") }
func logPath(dir string) string       { return filepath.Join(dir, "runtime.log") }
func listenArg(dir string) string     { return "unix:" + socketPath(dir) }
