package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// Defaults of ServiceOptions.
const (
	DefaultStartTimeout  = 30 * time.Second
	DefaultWatchInterval = 5 * time.Second
	DefaultOrphanGrace   = 2 * time.Minute
	DefaultPoolHold      = 250 * time.Millisecond
)

// ServiceOptions configures a Service. Store, Backend and Sealer are required.
type ServiceOptions struct {
	Store   Store
	Backend Backend
	// Sealer seals the runtime session keys before they are stored.
	Sealer Sealer
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a fresh sandbox id, 32 lowercase hex digits; nil means random.
	NewID func() string
	// NewKey returns a fresh session key; nil means 32 random bytes, base64url.
	NewKey func() string
	// DefaultSpec is the spec Start uses when given none.
	DefaultSpec string
	// Node names the machine this service runs on; it is recorded with every sandbox it
	// starts. A node-local backend's sandboxes of another node are left alone: never
	// reconciled, watched or paused here, and their operations refused with a *NodeError.
	Node string
	// Replica names this server among the replicas of its store: a remote backend's
	// sandboxes, which every replica reaches, are reconciled and watched by one replica at a
	// time, the one whose claim of the role (Store.ClaimReconciler) holds. Empty means Node.
	Replica string
	// MaxRunningPerUser bounds a user's STARTING and RUNNING sandboxes; 0 means unlimited.
	MaxRunningPerUser int
	// StartTimeout bounds how long a runtime may take to answer after a start or a resume.
	StartTimeout time.Duration
	// WatchInterval is how often Run looks for sandboxes whose processes vanished (and for
	// idle ones).
	WatchInterval time.Duration
	// OrphanGrace is how long a remote backend's sandbox with no record is left alone before
	// the replica that reconciles removes it, and how long a STARTING record whose start has
	// no answer from the backend yet is taken to be a start in flight on another replica (at
	// least StartTimeout, which bounds such a start). Zero means DefaultOrphanGrace. A
	// node-local backend's orphans are removed at once: on its node only this service starts
	// sandboxes.
	OrphanGrace time.Duration
	// IdleTimeout, when positive, pauses RUNNING sandboxes nobody used for that long.
	IdleTimeout time.Duration
	// OnIdlePause is told of every sandbox paused for being idle (and for how long it was).
	OnIdlePause func(ctx context.Context, sb Sandbox, idle time.Duration)
	// Pools are the warm pools to keep: how many sandboxes of each spec (by id; "" is the
	// default spec) to keep started ahead of need, for Start to claim (pool.go). A backend
	// without Capabilities.Pool keeps none. Run fills them; Close drains them.
	Pools map[string]int
	// PoolHold bounds how long a claim's starter (StartSettling) may hold back the pools'
	// refill while it sets its sandbox up. Zero means DefaultPoolHold.
	PoolHold time.Duration
	// Metrics is told how starts, pauses and resumes went; nil tells nobody.
	Metrics Metrics
	// OnStatus is told of every change of a sandbox's status after its creation, with the
	// status it left, once it is stored, in order for each sandbox; a deletion is told as
	// MISSING with the detail DetailDeleted. It runs while the sandbox's operations wait, so
	// it must not call them, and must return quickly. nil tells nobody.
	OnStatus func(ctx context.Context, sb Sandbox, from Status)
}

// DetailDeleted is the detail of the MISSING status OnStatus is told at a deletion.
const DetailDeleted = "deleted"

// Metrics records the sandbox operations, for the server's metrics. ObserveOperation is
// called from many goroutines at once and must not block.
type Metrics interface {
	// ObserveOperation records one operation (OpStart, OpPause, OpResume) of backend: how
	// long it took (a start, until the runtime answered or the start failed) and whether it
	// failed.
	ObserveOperation(backend, op string, d time.Duration, failed bool)
	// PoolSize records how many sandboxes of spec wait in the warm pool of backend now.
	PoolSize(backend, spec string, ready int)
}

// Operations of Metrics.
const (
	OpStart  = "start"
	OpPause  = "pause"
	OpResume = "resume"
	// OpClaim is a start served from a warm pool: from the claim until the runtime answers
	// with the delivered key (RUNNING).
	OpClaim = "claim"
	// OpPoolStart is the start of a sandbox for a warm pool, until its runtime answers.
	OpPoolStart = "pool_start"
)

type noMetrics struct{}

func (noMetrics) ObserveOperation(string, string, time.Duration, bool) {}
func (noMetrics) PoolSize(string, string, int)                         {}

// Service owns the lifecycle of sandboxes: it keeps the store's records and the backend's
// processes in step, and is the only writer of sandbox records.
//
// All methods are safe for concurrent use. Operations on one sandbox run one at a time;
// different sandboxes proceed in parallel. Methods that take an ownerID act only on that
// owner's sandboxes: another owner's sandbox is ErrNotFound.
//
// Lifecycle: NewService, then Reconcile once at start-up, then Run (blocking, usually in its
// own goroutine) while serving, then Close. Run fills the warm pools. Close stops the
// service's goroutines and waits for them, and destroys the pools' sandboxes; the sandboxes
// of users keep running, and the next Reconcile adopts them.
type Service struct {
	store       Store
	backend     Backend
	sealer      Sealer
	log         *slog.Logger
	now         func() time.Time
	newID       func() string
	newKey      func() string
	defaultSpec string
	node        string
	replica     string
	caps        Capabilities
	// leading says that this replica reconciled the backend's sandboxes at its last look
	// (always, for a node-local backend).
	leading       atomic.Bool
	maxRunning    int
	startTimeout  time.Duration
	watchInterval time.Duration
	poolHold      time.Duration
	orphanGrace   time.Duration
	idleTimeout   time.Duration
	onIdlePause   func(ctx context.Context, sb Sandbox, idle time.Duration)
	metrics       Metrics
	onStatus      func(ctx context.Context, sb Sandbox, from Status)

	locks   keyLock // one per sandbox id, and one per owner ("owner:" + id); always id first
	changes notifier
	pools   *pools
	// shared keeps the warm pools in the backend, for every replica (pool_shared.go); nil
	// when they live in pools.
	shared SharedPools

	// life is the service's own lifetime, not a request's: Close cancels it, which stops
	// every goroutine the service started.
	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	starting map[string]*startWait            // readiness waits in flight, by sandbox id
	clients  map[string]*runtimeclient.Client // clients of RUNNING sandboxes, by sandbox id
	// lastActive and holds feed the idle auto-pause (idle.go).
	lastActive map[string]time.Time
	holds      map[string]int
	// toldUse is when tellUse last told the store of the use made here.
	toldUse time.Time
	// orphans are a remote backend's sandboxes without a live record, as the orphan passes
	// found them (orphans.go).
	orphans map[string]orphan
}

// startWait lets Delete stop the wait for a sandbox's runtime.
type startWait struct{ cancel context.CancelFunc }

// NewService returns a service. It panics if Store, Backend or Sealer is missing.
func NewService(opts ServiceOptions) *Service {
	if opts.Store == nil || opts.Backend == nil || opts.Sealer == nil {
		panic("sandbox.NewService: Store, Backend and Sealer are required")
	}
	s := &Service{
		store:         opts.Store,
		backend:       opts.Backend,
		sealer:        opts.Sealer,
		log:           opts.Logger,
		now:           opts.Now,
		newID:         opts.NewID,
		newKey:        opts.NewKey,
		defaultSpec:   opts.DefaultSpec,
		node:          opts.Node,
		replica:       opts.Replica,
		caps:          opts.Backend.Capabilities(),
		maxRunning:    opts.MaxRunningPerUser,
		startTimeout:  opts.StartTimeout,
		watchInterval: opts.WatchInterval,
		poolHold:      opts.PoolHold,
		orphanGrace:   opts.OrphanGrace,
		idleTimeout:   opts.IdleTimeout,
		onIdlePause:   opts.OnIdlePause,
		metrics:       opts.Metrics,
		onStatus:      opts.OnStatus,
		starting:      map[string]*startWait{},
		clients:       map[string]*runtimeclient.Client{},
		lastActive:    map[string]time.Time{},
		holds:         map[string]int{},
		pools:         newPools(opts.Pools, opts.DefaultSpec),
		orphans:       map[string]orphan{},
	}
	if sp, ok := opts.Backend.(SharedPools); ok && s.caps.Pool && s.caps.Remote {
		s.shared = sp
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if s.newID == nil {
		s.newID = func() string { return hex.EncodeToString(randomBytes(16)) }
	}
	if s.newKey == nil {
		s.newKey = func() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) }
	}
	if s.startTimeout <= 0 {
		s.startTimeout = DefaultStartTimeout
	}
	if s.watchInterval <= 0 {
		s.watchInterval = DefaultWatchInterval
	}
	if s.orphanGrace <= 0 {
		s.orphanGrace = DefaultOrphanGrace
	}
	if s.poolHold <= 0 {
		s.poolHold = DefaultPoolHold
	}
	s.log = s.log.With("backend", s.backend.Name())
	s.life, s.stop = context.WithCancel(context.Background())
	return s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux (crypto/rand documents it)
	return b
}

// Close stops the service's goroutines (readiness waits, the watcher, the pools' filler) and
// waits for them, then destroys the sandboxes of the warm pools. Users' sandboxes keep
// running. Safe to call twice.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	clients := s.clients
	s.clients = map[string]*runtimeclient.Client{}
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	s.drainPools()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	return nil
}

// spawn runs fn in a goroutine owned by the service, unless the service is closed.
func (s *Service) spawn(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// setStatus moves sb to status to (compare-and-set on its stored status) and wakes waiters.
func (s *Service) setStatus(ctx context.Context, sb Sandbox, to Status, detail string) (Sandbox, error) {
	if !CanTransition(sb.Status, to) {
		return sb, fmt.Errorf("sandbox %s: %s to %s: %w", sb.ID, sb.Status, to, ErrState)
	}
	from := sb.Status
	sb.Status, sb.Detail, sb.UpdatedAt = to, detail, s.now().UTC()
	if err := s.store.UpdateSandbox(ctx, sb, from); err != nil {
		return sb, fmt.Errorf("sandbox %s: %s to %s: %w", sb.ID, from, to, err)
	}
	if to != StatusRunning {
		s.dropClient(sb.ID)
	}
	s.changes.notify(sb.ID)
	s.log.Info("sandbox status", "sandbox_id", sb.ID, "from", from, "to", to, "detail", detail)
	s.told(ctx, sb, from)
	return sb, nil
}

// told tells OnStatus that sb left the status from.
func (s *Service) told(ctx context.Context, sb Sandbox, from Status) {
	if s.onStatus != nil {
		s.onStatus(context.WithoutCancel(ctx), sb, from)
	}
}

// sessionKey opens the sealed session key of sb.
func (s *Service) sessionKey(sb Sandbox) (string, error) {
	key, err := s.sealer.Open(sb.SessionKeySealed)
	if err != nil {
		return "", fmt.Errorf("open session key of sandbox %s: %w", sb.ID, err)
	}
	return string(key), nil
}

// ours reports an error if sb was started by another backend than the service's (wrapping
// ErrUnsupported), or if it lives on another node of a node-local backend (a *NodeError).
func (s *Service) ours(sb Sandbox) error {
	if sb.Backend != s.backend.Name() {
		return fmt.Errorf("sandbox %s runs on backend %q, this server uses %q: %w", sb.ID, sb.Backend, s.backend.Name(), ErrUnsupported)
	}
	return s.elsewhere(sb)
}

// elsewhere returns a *NodeError if sb is a node-local sandbox of another node.
func (s *Service) elsewhere(sb Sandbox) error {
	if !s.caps.Remote && sb.Backend == s.backend.Name() && sb.Node != s.node {
		return &NodeError{ID: sb.ID, Node: sb.Node, Here: s.node}
	}
	return nil
}

// reconcilerTTL is how long a replica's claim to reconcile a remote backend lives: three
// watch passes, and at least 10 s, so that a replica between two passes keeps it.
func (s *Service) reconcilerTTL() time.Duration { return max(3*s.watchInterval, 10*time.Second) }

// reconciles reports whether this replica reconciles and watches the backend's sandboxes now:
// always those of a node-local backend (of its node); a remote backend's while its claim to
// the role holds.
func (s *Service) reconciles(ctx context.Context) bool {
	if !s.caps.Remote {
		return true
	}
	replica := s.replica
	if replica == "" {
		replica = s.node
	}
	ok, err := s.store.ClaimReconciler(ctx, s.backend.Name(), replica, s.reconcilerTTL())
	if err != nil {
		s.log.Warn("claim the reconciliation of the backend's sandboxes", "err", err)
		return false
	}
	return ok
}

// Capabilities are the backend's.
func (s *Service) Capabilities() Capabilities { return s.caps }

// Reaches reports whether this service reaches the runtimes of sandboxes of backend on node:
// its own backend's, on this node or on any when the backend is remote.
func (s *Service) Reaches(node, backend string) bool {
	return backend == s.backend.Name() && (s.caps.Remote || node == s.node)
}

// Node is the node this service runs on.
func (s *Service) Node() string { return s.node }

// observe records an operation of the backend that began at start.
func (s *Service) observe(op string, start time.Time, err error) {
	s.metrics.ObserveOperation(s.backend.Name(), op, time.Since(start), err != nil)
}
