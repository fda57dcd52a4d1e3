// Package sandbox defines what a sandbox is, the specs sandboxes start from, the backends that run
// them and the service that owns their lifecycle. Backends live in child packages named after
// their technology (process, bwrap, docker, kubernetes); sandboxtest holds the suite every
// backend passes.
package sandbox

import (
	"errors"
	"time"
)

// Status is the lifecycle state of a sandbox as clients see it.
type Status string

// Sandbox statuses, as in the OpenHands V1 API.
const (
	StatusStarting Status = "STARTING"
	StatusRunning  Status = "RUNNING"
	StatusPaused   Status = "PAUSED"
	StatusError    Status = "ERROR"
	StatusMissing  Status = "MISSING"
)

// Sentinel errors. Stores and backends wrap or return these; the HTTP layer maps them to statuses.
var (
	// ErrNotFound: no sandbox (or spec) with that id belongs to the caller.
	ErrNotFound = errors.New("sandbox not found")
	// ErrSpecNotFound: the requested sandbox spec does not exist.
	ErrSpecNotFound = errors.New("sandbox spec not found")
	// ErrState: the sandbox is in a state that does not allow the operation (see Transition).
	ErrState = errors.New("sandbox state does not allow this")
	// ErrLimit: the user already runs as many sandboxes as allowed.
	ErrLimit = errors.New("too many running sandboxes")
	// ErrUnsupported: the backend cannot honour part of a spec.
	ErrUnsupported = errors.New("not supported by this sandbox backend")
	// ErrOtherNode: the sandbox lives on another node, whose replica alone can reach it.
	ErrOtherNode = errors.New("the sandbox runs on another node")
	// ErrFailed: the backend could not start or resume the sandbox, or its runtime did not
	// answer in time. A *FailedError says why in its owner's words; trying again may work.
	ErrFailed = errors.New("the sandbox backend failed")
)

// FailedError is a start or resume the backend could not carry out. It matches ErrFailed.
type FailedError struct {
	// Op is "start" or "resume"; ID is the sandbox's.
	Op, ID string
	// Detail says what happened, for the owner (a started sandbox's record in ERROR holds
	// the same); Err is the cause, which may name host paths, for the log.
	Detail string
	Err    error
}

func (e *FailedError) Error() string { return e.Op + " sandbox " + e.ID + ": " + e.Err.Error() }

func (e *FailedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFailed) hold.
func (e *FailedError) Is(target error) bool { return target == ErrFailed }

// ClientMessage is the text shown to clients.
func (e *FailedError) ClientMessage() string {
	return "sandbox " + e.ID + " could not " + e.Op + ": " + e.Detail
}

// NodeError says which node a sandbox lives on, when this replica is on another. It
// matches ErrOtherNode.
type NodeError struct {
	ID, Node, Here string
}

func (e *NodeError) Error() string {
	return "sandbox " + e.ID + " runs on node " + e.Node + ", and this server is node " + e.Here
}

// Is makes errors.Is(err, ErrOtherNode) hold.
func (e *NodeError) Is(target error) bool { return target == ErrOtherNode }

// ClientMessage is the text shown to clients.
func (e *NodeError) ClientMessage() string {
	return "the sandbox runs on node " + e.Node + ", which this server cannot reach; send the request to a server of that node"
}

// Sandbox is the stored record of one sandbox.
type Sandbox struct {
	ID      string
	OwnerID string
	SpecID  string
	Backend string
	// Node names the machine a node-local backend's sandbox lives on: only the replica of
	// that node reaches, watches and reconciles it (Capabilities.Remote). Empty in records
	// older than nodes until a replica of the machine adopts them (Store.AdoptSandboxes).
	Node   string
	Status Status
	// Detail says why a sandbox is in ERROR or MISSING; empty otherwise.
	Detail string
	// SessionKeySealed is the runtime's session key, sealed with the server key.
	SessionKeySealed []byte
	// SessionKeyHash is HashSessionKey of the session key: what a sandbox is found by when a
	// request names it only by its key. Empty in records older than the digest until
	// Reconcile fills it in.
	//
	// Neither is ever changed in place (a new key is a new slice): the readers of a stored
	// sandbox share them (the store's listing cache hands them out as it keeps them).
	SessionKeyHash []byte
	// Instance is what the backend needs to find the sandbox again after a restart.
	Instance  Instance
	CreatedAt time.Time
	UpdatedAt time.Time
	// ActiveAt is when a replica last told the store that it used the sandbox (a tool call,
	// an agent working in it); zero when none did. The replica that pauses idle sandboxes
	// reads it beside the use it saw itself.
	ActiveAt time.Time
	// Rev is the version a listing read the record at (Store.ListSandboxes,
	// Store.SandboxesAt): it counts the changes of what a listing shows of it. The other
	// reads leave it 0. Not part of any answer.
	Rev int64 `json:"-"`
}

// Limits bound the resources of a sandbox. Zero means unlimited; the server's configuration
// fills the limits a spec leaves at zero with its defaults before a spec is stored.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty" toml:"memory_bytes"`
	CPUs        float64 `json:"cpus,omitempty" toml:"cpus"`
	PIDs        int64   `json:"pids,omitempty" toml:"pids"`
	DiskBytes   int64   `json:"disk_bytes,omitempty" toml:"disk_bytes"`
	// TmpBytes bounds the sandbox's private /tmp; zero leaves it to the backend (bwrap: half
	// the memory limit).
	TmpBytes int64 `json:"tmp_bytes,omitempty" toml:"tmp_bytes"`
}

// Network modes a spec may ask for.
const (
	// NetworkEgress (the default): a network namespace of the sandbox's own with outbound
	// connections to the internet, and none to the host's loopback, the host's own addresses
	// or link-local (metadata) addresses.
	NetworkEgress = "egress"
	// NetworkNone: a network namespace of the sandbox's own with only its loopback.
	NetworkNone = "none"
	// NetworkHost: an administrator's explicit choice to give up network isolation (see each
	// backend); specs that ask for it carry a warning.
	NetworkHost = "host"
)

// NetworkOf is spec's network mode, NetworkEgress when it names none.
func NetworkOf(spec Spec) string {
	if spec.Network == "" {
		return NetworkEgress
	}
	return spec.Network
}

// HostNetworkWarning is the warning of specs with network "host", in the log and the spec
// listing.
const HostNetworkWarning = `network "host": sandboxes of this spec are not cut off from the host's network and may reach services that listen on it`

// Spec is a template sandboxes start from.
type Spec struct {
	ID          string
	Description string
	// Command starts the tool router inside the sandbox. The first element "agentd" names the
	// agentd binary made available to the sandbox; backends append listen and workspace flags.
	Command    []string
	InitialEnv map[string]string
	// WorkingDir is the workspace path as seen inside the sandbox. Backends without a mount
	// namespace (process) use the host path of the workspace instead.
	WorkingDir string
	Image      string // docker image reference
	Rootfs     string // bwrap root filesystem directory; empty means the host's system directories
	Network    string // NetworkEgress (also when empty), NetworkNone or NetworkHost
	Limits     Limits
	CreatedAt  time.Time
}
