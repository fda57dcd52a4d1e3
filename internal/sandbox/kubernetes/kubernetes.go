package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/podinit"
)

// Name is the configuration name of this backend.
const Name = "kubernetes"

// How agentd reaches a sandbox's runtime (Options.Reach).
const (
	// ReachIP dials the pod's IP, which must be routable from agentd: agentd runs in the
	// cluster, or on its pod network.
	ReachIP = "ip"
	// ReachPortForward goes through the API server's port forwarding to the pod, which needs
	// nothing but the API server: agentd outside the cluster.
	ReachPortForward = "port-forward"
)

// DefaultUID is the uid and gid of the sandbox's commands when Options.UID is zero, as the
// docker backend's.
const DefaultUID = 2000000000

// DefaultWorkspaceSize is the size a workspace volume asks for when the spec names no disk.
const DefaultWorkspaceSize = 10 << 30

// DefaultRequestShare is the share of a spec's memory and CPU limits its pod requests.
const DefaultRequestShare = 0.25

// DefaultDeny are the prefixes a sandbox with network egress cannot reach besides those the
// backend adds (the node's address, the API server's): the private, shared and link-local
// ranges, where a cluster's pods, services and nodes, and metadata services, live.
var DefaultDeny = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
}

// Options configures a Backend.
type Options struct {
	// Config reaches the cluster's API server (in-cluster or from a kubeconfig); required.
	Config *rest.Config
	// Namespace holds every sandbox's objects; required. It must exist.
	Namespace string
	// Installation names this agentd installation (a label value): the backend lists,
	// adopts and removes only sandboxes labelled with it, so that two installations can
	// share a namespace. Required.
	Installation string
	// RuntimeImage is agentd's image, which holds the statically linked agentd at
	// RuntimeBinary: the init container runs it to copy it into the pod and set the pod's
	// rules. Required.
	RuntimeImage string
	// RuntimeBinary is the path of agentd in RuntimeImage; empty means "/agentd".
	RuntimeBinary string
	// PullPolicy of the runtime image and the sandbox images; empty means IfNotPresent.
	PullPolicy string
	// UID is the unprivileged uid (and gid) of the sandbox's commands; zero means DefaultUID.
	UID int
	// Reach is ReachIP or ReachPortForward; empty means ReachIP.
	Reach string
	// DialContext makes the connections to pods' IPs (ReachIP); nil means a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// StreamTransport gives the round tripper and upgrader of the port forwarding
	// (ReachPortForward); nil means spdy.RoundTripperFor(Config).
	StreamTransport func() (http.RoundTripper, spdy.Upgrader, error)
	// Deny are the prefixes a sandbox with network egress cannot reach, on top of the node's
	// address and the API server's; nil means DefaultDeny.
	Deny []netip.Prefix
	// StorageClass of the workspace volumes; empty means the cluster's default.
	StorageClass string
	// WorkspaceSize is the size of a workspace volume whose spec names no disk; zero means
	// DefaultWorkspaceSize.
	WorkspaceSize int64
	// RequestShare is the share of the spec's memory and CPU limits a pod requests; zero
	// means DefaultRequestShare. 1 makes every sandbox's pod Guaranteed.
	RequestShare float64
	Logger       *slog.Logger
}

// Backend runs sandboxes as pods. It is safe for concurrent use.
type Backend struct {
	client       kubernetes.Interface
	config       *rest.Config
	ns           string
	installation string
	image        string
	binary       string
	pullPolicy   string
	uid          int
	reach        string
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
	streams      func() (http.RoundTripper, spdy.Upgrader, error)
	deny         []netip.Prefix
	storageClass string
	wsSize       int64
	requestShare float64
	log          *slog.Logger

	checkMu   sync.Mutex
	checkedAt time.Time // of the last Check that passed

	inf       informer      // the view of the namespace's sandboxes (informer.go)
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Transporter = (*Backend)(nil)
	_ sandbox.SpecChecker = (*Backend)(nil)
	_ sandbox.Checker     = (*Backend)(nil)
	_ sandbox.Watcher     = (*Backend)(nil)
	_ sandbox.SharedPools = (*Backend)(nil)
)

// New checks opts and makes the API client. It does not contact the API server: Check does
// (the composition root calls it before serving).
func New(opts Options) (*Backend, error) {
	var errs []error
	if opts.Config == nil {
		errs = append(errs, errors.New("no cluster configuration"))
	}
	if opts.Namespace == "" {
		errs = append(errs, errors.New("no namespace"))
	} else if msgs := validation.IsDNS1123Label(opts.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %v", opts.Namespace, msgs))
	}
	if opts.Installation == "" {
		errs = append(errs, errors.New("no installation name"))
	} else if msgs := validation.IsValidLabelValue(opts.Installation); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("installation %q is not a label value: %v", opts.Installation, msgs))
	}
	if opts.RuntimeImage == "" {
		errs = append(errs, errors.New("no runtime image (agentd's image)"))
	}
	switch opts.Reach {
	case "", ReachIP, ReachPortForward:
	default:
		errs = append(errs, fmt.Errorf("reach %q: want %s or %s", opts.Reach, ReachIP, ReachPortForward))
	}
	switch opts.PullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		errs = append(errs, fmt.Errorf("pull policy %q: want Always, IfNotPresent or Never", opts.PullPolicy))
	}
	if opts.UID < 0 || opts.UID >= 1<<32-1 {
		errs = append(errs, fmt.Errorf("uid %d is not an unprivileged uid", opts.UID))
	}
	if opts.RequestShare < 0 || opts.RequestShare > 1 {
		errs = append(errs, fmt.Errorf("request share %v: want a number from 0 to 1", opts.RequestShare))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new kubernetes backend: %w", errors.Join(errs...))
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("new kubernetes backend: %w", err)
	}
	b := &Backend{
		client:       cs,
		config:       opts.Config,
		ns:           opts.Namespace,
		installation: opts.Installation,
		image:        opts.RuntimeImage,
		binary:       opts.RuntimeBinary,
		pullPolicy:   opts.PullPolicy,
		uid:          opts.UID,
		reach:        opts.Reach,
		dial:         opts.DialContext,
		streams:      opts.StreamTransport,
		deny:         opts.Deny,
		storageClass: opts.StorageClass,
		wsSize:       opts.WorkspaceSize,
		requestShare: opts.RequestShare,
		log:          opts.Logger,
		closed:       make(chan struct{}),
	}
	if b.binary == "" {
		b.binary = "/agentd"
	}
	if b.pullPolicy == "" {
		b.pullPolicy = "IfNotPresent"
	}
	if b.uid == 0 {
		b.uid = DefaultUID
	}
	if b.reach == "" {
		b.reach = ReachIP
	}
	if b.dial == nil {
		b.dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	if b.streams == nil {
		b.streams = func() (http.RoundTripper, spdy.Upgrader, error) { return spdy.RoundTripperFor(opts.Config) }
	}
	if b.deny == nil {
		b.deny = DefaultDeny
	}
	b.deny = append(b.deny, apiServerPrefixes(opts.Config.Host)...)
	if b.wsSize == 0 {
		b.wsSize = DefaultWorkspaceSize
	}
	if b.requestShare == 0 {
		b.requestShare = DefaultRequestShare
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// apiServerPrefixes are the API server's addresses as its URL names them, when it names an
// address (in a cluster it is a service address, in the denied ranges already).
func apiServerPrefixes(host string) []netip.Prefix {
	u, err := url.Parse(host)
	if err != nil {
		return nil
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil || a.IsLoopback() {
		return nil
	}
	p, _ := podinit.ParsePrefix(a.String())
	return []netip.Prefix{p}
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return Name }

// Capabilities: pods run on the cluster, reached from any replica; a pod cannot be frozen,
// so pause stops it and keeps its workspace; memory, CPU, disk (ephemeral storage and the
// workspace volume's size) and /tmp are the pod's limits. Processes are not: a pod spec has
// no such limit (the kubelet's podPidsLimit bounds every pod of a node alike). Warm pools
// are kept in the cluster, for every replica (pool.go).
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{
		Remote: true,
		Freeze: false,
		Pool:   true,
		Limits: sandbox.LimitKinds{Memory: true, CPU: true, Disk: true, Tmp: true},
	}
}

// Close stops the informers and WatchChanges. Sandboxes keep running, and the backend can still
// manage them, asking the API server for what its informers told (as a new backend's clients
// of a sandbox an old one started keep working). Safe to call twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.inf.close()
	})
	return nil
}
