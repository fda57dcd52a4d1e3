package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// WaitDeadline is when a backend's wait within Start (for its runtime's socket, its first
// answer) gives up: ctx's deadline, which the service sets from its start timeout, so that an
// administrator's longer timeout lengthens it too; fallback from now when ctx has none.
func WaitDeadline(ctx context.Context, fallback time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(fallback)
}

// Backend runs sandboxes with one technology.
//
// Contract:
//   - All methods may be called concurrently, for different sandboxes and for the same one; a
//     backend serialises what it must.
//   - Start returns once the sandbox's processes exist; the runtime may not answer yet. The
//     caller (Service) polls the runtime's health before calling the sandbox RUNNING. If Start
//     fails, nothing of the sandbox is left behind.
//   - Pause freezes every process of the sandbox, Resume thaws them. Both are idempotent.
//   - Destroy kills every process and removes everything the sandbox owned (directories,
//     cgroups, containers, volumes). Destroying a sandbox that is already gone is not an error.
//   - Inspect never changes anything.
//   - Instances survive a restart of agentd: a new Backend value given an Instance returned by
//     an earlier one must be able to inspect, pause, resume and destroy it.
type Backend interface {
	// Name is the configuration name of the backend: "process", "bwrap", "docker".
	Name() string
	// Capabilities say what the backend can do; the rest of agentd reads them instead of
	// assuming. They do not change while the backend is open.
	Capabilities() Capabilities
	// Start creates and starts a sandbox.
	Start(ctx context.Context, req StartRequest) (Instance, error)
	Pause(ctx context.Context, inst Instance) error
	Resume(ctx context.Context, inst Instance) error
	Destroy(ctx context.Context, inst Instance) error
	// Inspect reports the state of the sandbox's processes.
	Inspect(ctx context.Context, inst Instance) (State, error)
	// List returns the ids of every sandbox of this backend found on the machine (running or
	// not), so the service can remove orphans that have no record.
	List(ctx context.Context) ([]Instance, error)
	// Close releases the backend's own resources. It leaves sandboxes running. Safe to call twice.
	Close() error
}

// Capabilities say what a backend can do, as Nomad's drivers declare theirs.
type Capabilities struct {
	// Remote: the backend's sandboxes run off this machine (on a cluster), and every replica
	// of the control plane reaches, watches and reconciles them alike (one at a time). A
	// node-local backend's sandboxes live on the machine that started them: only the replica
	// on that node (Sandbox.Node) reaches, watches and reconciles them.
	Remote bool
	// Freeze: Pause freezes the sandbox's processes, which keep their memory, their terminal
	// sessions and their children until Resume. Without it, Pause stops them and keeps only
	// the workspace; Resume starts them again.
	Freeze bool
	// Limits are the limits of a spec the backend enforces on this machine.
	Limits LimitKinds
	// Pool: Start takes a StartRequest with a PoolSecret in place of a SessionKey, and
	// starts a sandbox whose runtime waits for its session key (agentd runtime --pooled);
	// the service keeps warm pools of such sandboxes (pool.go).
	Pool bool
}

// LimitKinds name the kinds of Limits.
type LimitKinds struct {
	Memory, CPU, PIDs, Disk, Tmp bool
}

// StartRequest is what a backend needs to start one sandbox.
type StartRequest struct {
	// ID is the sandbox id; it is safe to use as a path element.
	ID      string
	OwnerID string
	Spec    Spec
	// SessionKey protects the runtime: every request to it must carry this key.
	SessionKey string
	// PoolSecret, in place of SessionKey (which is then empty, as OwnerID is), starts a
	// sandbox for a warm pool: the backend hands it to the runtime the way it hands a session
	// key, and starts the runtime with --pooled, so that the runtime holds no key until the
	// start that claims the sandbox delivers one, authenticated by this secret. Only backends
	// with Capabilities.Pool take it.
	PoolSecret string
	// Pool names the spec whose pool the sandbox is for, when PoolSecret is set, for
	// backends that label what they make.
	Pool string
	// PoolDigest tells apart the versions of Pool's spec (what a claim must match), for
	// backends that keep their pools themselves (SharedPools).
	PoolDigest string
}

// RuntimeKey is what the backend hands the runtime as its key: the session key, or the
// pool's secret of a pooled start. It is an error for a request to have neither or both.
func (r StartRequest) RuntimeKey() (string, error) {
	switch {
	case r.SessionKey != "" && r.PoolSecret != "":
		return "", errors.New("both a session key and a pool secret")
	case r.SessionKey != "":
		return r.SessionKey, nil
	case r.PoolSecret != "":
		return r.PoolSecret, nil
	}
	return "", errors.New("no session key")
}

// Pooled reports whether the request starts a sandbox for a warm pool.
func (r StartRequest) Pooled() bool { return r.PoolSecret != "" }

// PooledFlag is the runtime flag of a pooled start.
const PooledFlag = "--pooled"

// RuntimeArgs appends to argv the runtime flags the request adds: PooledFlag for a pooled
// start.
func (r StartRequest) RuntimeArgs(argv []string) []string {
	if r.Pooled() {
		return append(argv, PooledFlag)
	}
	return argv
}

// State is what Inspect finds.
type State string

// Backend states.
const (
	StateRunning State = "running" // processes exist and are not frozen
	StatePaused  State = "paused"  // processes exist and are frozen
	StateGone    State = "gone"    // nothing of the sandbox runs any more
)

// Instance locates a started sandbox. The service stores it with the sandbox record.
type Instance struct {
	ID string `json:"id"`
	// Endpoint reaches the runtime: "unix:/abs/path.sock", "http://127.0.0.1:port", or an
	// https URL that a Transporter's transport reaches.
	Endpoint string `json:"endpoint"`
	// Workspace is the workspace directory as seen by processes inside the sandbox.
	Workspace string `json:"workspace"`
	// HostWorkspace is the workspace directory on the host, where there is one.
	HostWorkspace string `json:"host_workspace,omitempty"`
	// State is backend-specific (pids, start times, container ids).
	State json.RawMessage `json:"state,omitempty"`
}

// Transporter is implemented by backends whose runtimes this process does not reach at their
// endpoint's address alone: a pod's runtime is found by its IP over TLS with the sandbox's
// own certificate, or through the cluster's API server. The service's runtime clients (its
// health checks too) go through the transport it returns for an instance; without it, they
// dial the endpoint. Local backends' runtimes listen on unix sockets and need none.
type Transporter interface {
	// Transport returns how to reach the runtime of inst. It may be called for every client
	// the service makes, so it must not block for long; the connections it makes may find
	// the sandbox where it is at the moment (a resumed sandbox's new pod).
	Transport(inst Instance) (runtimeclient.Transport, error)
}

// SpecChecker is implemented by backends that can tell, without starting anything, whether
// they can honour a spec. The service asks before it stores a sandbox, so an impossible spec
// leaves no record behind; the spec listing shows the answers as warnings.
type SpecChecker interface {
	// CheckSpec returns an *UnsupportedError for what the backend cannot do, or nil.
	CheckSpec(spec Spec) error
}

// UnsupportedError names what a backend cannot honour in a spec. It matches ErrUnsupported.
type UnsupportedError struct {
	Backend string
	What    []string
}

func (e *UnsupportedError) Error() string {
	return "the " + e.Backend + " backend cannot honour " + joinWords(e.What)
}

// Is makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// ClientMessage is the text shown to clients.
func (e *UnsupportedError) ClientMessage() string { return e.Error() }

func joinWords(ws []string) string {
	out := ""
	for i, w := range ws {
		switch {
		case i == 0:
		case i == len(ws)-1:
			out += " and "
		default:
			out += ", "
		}
		out += w
	}
	return out
}

// Warner is implemented by backends with a standing warning about every sandbox they run
// (the process backend isolates nothing).
type Warner interface {
	Warning() string
}

// SpecWarnings lists, for the spec listing, what backend b cannot do for spec: its standing
// warning, what it cannot honour in the spec, and the isolation the spec itself gives up.
func SpecWarnings(b Backend, spec Spec) []string {
	var out []string
	if w, ok := b.(Warner); ok {
		out = append(out, w.Warning())
	}
	if NetworkOf(spec) == NetworkHost {
		out = append(out, HostNetworkWarning)
	}
	if c, ok := b.(SpecChecker); ok {
		if err := c.CheckSpec(spec); err != nil {
			out = append(out, err.Error()+": sandboxes of this spec cannot start")
		}
	}
	return out
}

// Checker is implemented by backends that can tell cheaply, without starting a sandbox,
// whether they can start sandboxes now: their directory is writable, their executables and
// cgroup hierarchies are in place, their engine answers. Readiness probes call it, so it must
// be fast and change nothing that lasts.
type Checker interface {
	// Check returns nil, or a *CheckError saying what does not work.
	Check(ctx context.Context) error
}

// CheckError says why a backend cannot start sandboxes. Problem is worded for operators
// and names no host path; Err, the cause, goes to the log only.
type CheckError struct {
	Backend string
	Problem string
	Err     error
}

func (e *CheckError) Error() string {
	if e.Err == nil {
		return "the " + e.Backend + " backend: " + e.Problem
	}
	return "the " + e.Backend + " backend: " + e.Problem + ": " + e.Err.Error()
}

func (e *CheckError) Unwrap() error { return e.Err }

// ClientMessage is the text readiness probes show.
func (e *CheckError) ClientMessage() string { return "the " + e.Backend + " backend: " + e.Problem }

// Watcher is implemented by backends that are told of their sandboxes' changes as they
// happen (a cluster's watch), rather than finding them by being asked: the service then
// checks a sandbox when its backend tells of a change to it, at once, instead of at the
// watcher's next pass.
type Watcher interface {
	// WatchChanges calls changed with the id of each sandbox whose processes may have ended
	// or vanished, until ctx ends or the backend is closed, and returns then. changed must
	// return quickly. A backend that loses its source of changes for a while (its API server
	// restarting) takes it up again by itself and tells of what changed meanwhile.
	WatchChanges(ctx context.Context, changed func(id string)) error
}
