package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// A warm pool keeps sandboxes of a spec started ahead of need: their namespaces, network,
// limits and runtime are up, and they hold nothing of any user: no owner, no session key,
// no environment of the spec, an empty workspace. Their runtimes (agentd runtime --pooled)
// wait for one delivery, authenticated by a secret of each pooled sandbox that only this
// service knows. Start claims one (pops it from the pool, under the pool's lock), records it
// as the owner's sandbox, and only then delivers the session key and the spec's environment
// to it; from then on it is a sandbox like one started cold, and the pool starts another in
// the background. A claimed sandbox never goes back to a pool.
//
// Pools live in this service, in memory: the members of a node-local backend are reached
// from this replica alone, so a claim needs no coordination beyond the lock. A member has no
// record in the store; should the server stop without draining them (a kill), the next
// Reconcile finds them as sandboxes without a record and destroys them. A remote backend
// that keeps its pools itself, for every replica, is served by pool_shared.go instead.

// poolMember is one pooled sandbox.
type poolMember struct {
	inst   Instance
	secret string // the secret its runtime takes its delivery with
	digest string // specDigest of the spec it started from
}

// pools holds the members of every pool of a service.
type pools struct {
	mu    sync.Mutex
	sizes map[string]int // spec id → sandboxes kept warm
	ready map[string][]poolMember
	ids   map[string]bool // ids of the members in ready
	// shared counts the ready members of shared pools (pool_shared.go) as last seen.
	shared map[string]int
	closed bool
	// wake tells the filler that a pool may be short.
	wake chan struct{}
	// claimHolds are the claims whose starters still set their sandboxes up (StartSettling),
	// each with the time its hold ends at the latest: no refill begins while one lasts.
	claimHolds map[uint64]time.Time
	lastHold   uint64
}

func newPools(sizes map[string]int, defaultSpec string) *pools {
	p := &pools{sizes: map[string]int{}, ready: map[string][]poolMember{}, ids: map[string]bool{}, shared: map[string]int{}, wake: make(chan struct{}, 1), claimHolds: map[uint64]time.Time{}}
	for spec, n := range sizes {
		if spec == "" {
			spec = defaultSpec
		}
		if n > 0 && spec != "" {
			p.sizes[spec] = n
		}
	}
	return p
}

func (p *pools) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// holdRefill holds back the refill of every pool until release is called or the time until,
// whichever comes first. release wakes the filler; calling it again does nothing.
func (p *pools) holdRefill(until time.Time) (release func()) {
	p.mu.Lock()
	p.lastHold++
	id := p.lastHold
	p.claimHolds[id] = until
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		delete(p.claimHolds, id)
		p.mu.Unlock()
		p.poke()
	})
}

// refillHeldFor is how much longer, from now, the refill is held back at most: zero when no hold
// lasts. Holds that ended by their time are forgotten.
func (p *pools) refillHeldFor(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	for id, until := range p.claimHolds {
		if left := until.Sub(now); left > 0 {
			d = max(d, left)
		} else {
			delete(p.claimHolds, id)
		}
	}
	return d
}

// take pops the oldest member of spec's pool that started from a spec with digest.
func (p *pools) take(specID, digest string) (poolMember, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ms := p.ready[specID]
	for i, m := range ms {
		if m.digest == digest {
			p.ready[specID] = slices.Delete(ms, i, i+1)
			delete(p.ids, m.inst.ID)
			return m, true
		}
	}
	return poolMember{}, false
}

// add puts m in spec's pool, unless the pools are closed (drained).
func (p *pools) add(specID string, m poolMember) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.ready[specID] = append(p.ready[specID], m)
	p.ids[m.inst.ID] = true
	return true
}

// stale removes and returns the members of spec's pool that started from another spec than
// the one with digest (the spec was changed since).
func (p *pools) stale(specID, digest string) []poolMember {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []poolMember
	p.ready[specID] = slices.DeleteFunc(p.ready[specID], func(m poolMember) bool {
		if m.digest != digest {
			out = append(out, m)
			delete(p.ids, m.inst.ID)
			return true
		}
		return false
	})
	return out
}

func (p *pools) count(specID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready[specID])
}

func (p *pools) setShared(specID string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shared[specID] = n
}

func (p *pools) sharedCount(specID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shared[specID]
}

func (p *pools) holds(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[id]
}

// drain closes the pools and returns every member.
func (p *pools) drain() []poolMember {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var out []poolMember
	for _, spec := range slices.Sorted(maps.Keys(p.ready)) {
		out = append(out, p.ready[spec]...)
	}
	p.ready, p.ids = map[string][]poolMember{}, map[string]bool{}
	return out
}

// PoolSpec is spec as a pooled sandbox starts from it: without the spec's environment, which
// the claim delivers.
func PoolSpec(spec Spec) Spec {
	spec.InitialEnv = nil
	return spec
}

// specDigest tells apart the specs a pooled sandbox could not serve as one started from: it
// covers what the backend started (image, command, limits, network, ...), not what the claim
// delivers (the environment) or says nothing to the backend (the description, the time).
func specDigest(spec Spec) string {
	spec = PoolSpec(spec)
	spec.Description, spec.CreatedAt = "", time.Time{}
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// PoolReady is how many sandboxes of spec (empty: the default spec) wait in this service's
// pool now; of a shared pool, how many this service saw at its last look.
func (s *Service) PoolReady(specID string) int {
	if specID == "" {
		specID = s.defaultSpec
	}
	if s.shared != nil {
		return s.pools.sharedCount(specID)
	}
	return s.pools.count(specID)
}

// PoolSizes are the pools this service keeps, by spec id, and their sizes; none when the
// backend cannot pool (Capabilities.Pool).
func (s *Service) PoolSizes() map[string]int {
	if !s.caps.Pool {
		return map[string]int{}
	}
	return maps.Clone(s.pools.sizes)
}

// poolRetry is how long the filler waits after a pooled start failed before it tries again,
// unless a claim wakes it first.
const poolRetry = 10 * time.Second

// fillPools keeps the pools full until ctx ends: it starts what they lack, one sandbox at a
// time, whenever a claim takes one, and at every watch interval drops the members of specs
// changed since they started.
func (s *Service) fillPools(ctx context.Context) {
	pass := s.fillOnce
	switch {
	case s.shared != nil:
		// Even without pools of its own, it retires what other replicas' pooled; only while
		// it reconciles the backend's sandboxes.
		pass = func(ctx context.Context) error {
			if !s.leading.Load() {
				return nil
			}
			return s.fillSharedOnce(ctx)
		}
	case len(s.pools.sizes) == 0:
		return
	case !s.caps.Pool:
		s.log.Warn("the backend cannot keep warm pools: sandboxes start cold", "pools", s.pools.sizes)
		return
	}
	for {
		wait := s.watchInterval
		if held := s.pools.refillHeldFor(time.Now()); held > 0 {
			// A claim's starter still sets its sandbox up: the refill waits for its release.
			wait = min(wait, held)
		} else if err := pass(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("fill the warm pools", "err", err)
			wait = max(wait, poolRetry)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.pools.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// fillOnce makes one pass over the pools.
func (s *Service) fillOnce(ctx context.Context) error {
	var errs []error
	for _, specID := range slices.Sorted(maps.Keys(s.pools.sizes)) {
		spec, err := s.store.GetSpec(ctx, specID)
		if err != nil {
			errs = append(errs, fmt.Errorf("pool of spec %q: %w", specID, err))
			continue
		}
		if c, ok := s.backend.(SpecChecker); ok {
			if err := c.CheckSpec(spec); err != nil {
				errs = append(errs, fmt.Errorf("pool of spec %q: %w", specID, err))
				continue
			}
		}
		digest := specDigest(spec)
		for _, m := range s.pools.stale(specID, digest) {
			s.destroyMember(m, "its spec changed")
		}
		for s.pools.count(specID) < s.pools.sizes[specID] && s.pools.refillHeldFor(time.Now()) == 0 && ctx.Err() == nil {
			m, err := s.startMember(ctx, spec, digest)
			if err != nil {
				errs = append(errs, fmt.Errorf("pool of spec %q: %w", specID, err))
				break
			}
			if !s.pools.add(specID, m) {
				s.destroyMember(m, "the pools are drained")
				return nil
			}
			s.metrics.PoolSize(s.backend.Name(), specID, s.pools.count(specID))
		}
	}
	return errors.Join(errs...)
}

// startMember starts a pooled sandbox of spec and waits until its runtime answers.
func (s *Service) startMember(ctx context.Context, spec Spec, digest string) (poolMember, error) {
	m := poolMember{secret: s.newKey(), digest: digest}
	id := s.newID()
	sctx, cancel := context.WithTimeoutCause(ctx, s.startTimeout, errStartTimeout)
	defer cancel()
	began := time.Now()
	inst, err := s.backend.Start(sctx, StartRequest{ID: id, Spec: PoolSpec(spec), PoolSecret: m.secret, Pool: spec.ID, PoolDigest: digest})
	if err == nil {
		m.inst = inst
		err = s.waitAlive(sctx, inst, m.secret)
		if err != nil {
			s.destroyMember(m, "its runtime did not answer")
		}
	}
	s.observe(OpPoolStart, began, err)
	if err != nil {
		return poolMember{}, fmt.Errorf("start pooled sandbox %s: %w", id, err)
	}
	s.log.Debug("pooled sandbox ready", "sandbox_id", id, "spec_id", spec.ID)
	return m, nil
}

// waitAlive polls the liveness probe of a pooled runtime, which is all it answers.
func (s *Service) waitAlive(ctx context.Context, inst Instance, secret string) error {
	c, err := s.newClient(inst, secret)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	start := time.Now()
	for delay := pollFirst; ; delay = nextPoll(delay, time.Since(start)) {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := c.Alive(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		case <-time.After(delay):
		}
	}
}

// destroyMember destroys a pooled sandbox that will never be claimed.
func (s *Service) destroyMember(m poolMember, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.startTimeout)
	defer cancel()
	if err := s.backend.Destroy(ctx, m.inst); err != nil {
		s.log.Error("destroy pooled sandbox", "sandbox_id", m.inst.ID, "why", why, "err", err)
		return
	}
	s.log.Debug("pooled sandbox destroyed", "sandbox_id", m.inst.ID, "why", why)
}

// drainPools destroys every pooled sandbox; the pools take none from then on. Shared pools
// are the installation's and stay for the other replicas.
func (s *Service) drainPools() {
	ms := s.pools.drain()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.destroyMember(m, "the server stops")
		}()
	}
	wg.Wait()
	for spec := range s.pools.sizes {
		s.metrics.PoolSize(s.backend.Name(), spec, 0)
	}
	if len(ms) > 0 {
		s.log.Info("warm pools drained", "sandboxes", len(ms))
	}
}

// startClaimed makes sandbox m, just taken from spec's pool, ownerID's: it records it
// (STARTING, counted against the owner's limit) and then delivers the session key key and the
// spec's environment to its runtime, which proves it serves with them by answering; the
// sandbox is then RUNNING. A member the record could not be made for goes back to its pool:
// nothing was delivered to it.
//
// A member of a shared pool (shared, not nil) is only chosen, not taken, when it comes: it is
// claimed in the backend once recorded. When another start recorded it first, or the backend
// says it was taken meanwhile (the record is then deleted), the error is errLostClaim.
func (s *Service) startClaimed(ctx context.Context, ownerID string, spec Spec, m poolMember, key string, sealed []byte, shared *PoolMember) (Sandbox, error) {
	began := time.Now()
	now := s.now().UTC()
	sb := Sandbox{
		ID:               m.inst.ID,
		OwnerID:          ownerID,
		SpecID:           spec.ID,
		Backend:          s.backend.Name(),
		Node:             s.node,
		Status:           StatusStarting,
		SessionKeySealed: sealed,
		SessionKeyHash:   HashSessionKey(key),
		Instance:         m.inst,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	unlock := s.locks.lock(sb.ID)
	defer unlock()
	if err := s.store.CreateSandbox(ctx, sb, s.maxRunning); err != nil {
		if shared == nil && !s.pools.add(spec.ID, m) {
			s.destroyMember(m, "the pools are drained")
		}
		if errors.Is(err, ErrLimit) {
			err = fmt.Errorf("%w: %d allowed are starting or running", ErrLimit, s.maxRunning)
		} else if shared != nil {
			// Most likely another replica's start recorded the member first (the id is
			// taken); if the store failed, the cold start that follows says so.
			err = fmt.Errorf("%w: %w", errLostClaim, err)
		}
		return Sandbox{}, fmt.Errorf("start sandbox: %w", err)
	}
	bctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.startTimeout, errStartTimeout)
	defer cancel()
	if shared == nil {
		s.metrics.PoolSize(s.backend.Name(), spec.ID, s.pools.count(spec.ID))
	} else if err := s.shared.Claim(bctx, *shared, ClaimRequest{OwnerID: ownerID, Spec: spec, SessionKey: key}); err != nil {
		if errors.Is(err, ErrPoolTaken) {
			if derr := s.store.DeleteSandbox(bctx, sb.ID); derr != nil {
				s.log.ErrorContext(ctx, "delete the record of a lost claim", "sandbox_id", sb.ID, "err", derr)
			}
			return Sandbox{}, fmt.Errorf("%w: %w", errLostClaim, err)
		}
		// Whether the claim took is unknown, but the record holds the member now: no other
		// start can have it. Nothing was delivered to it.
		s.observe(OpClaim, began, err)
		if derr := s.backend.Destroy(bctx, sb.Instance); derr != nil {
			s.log.ErrorContext(ctx, "destroy a pooled sandbox whose claim failed", "sandbox_id", sb.ID, "err", derr)
		}
		return s.failStart(bctx, sb, fmt.Errorf("claim the pooled sandbox: %w", err))
	}
	if err := s.deliver(bctx, sb, m.secret, key, spec.InitialEnv); err != nil {
		s.observe(OpClaim, began, err)
		if derr := s.backend.Destroy(bctx, sb.Instance); derr != nil {
			s.log.ErrorContext(ctx, "destroy claimed sandbox after a failed delivery", "sandbox_id", sb.ID, "err", derr)
		}
		return s.failStart(bctx, sb, fmt.Errorf("deliver to the pooled sandbox: %w", err))
	}
	running, err := s.setStatus(bctx, sb, StatusRunning, "")
	s.observe(OpClaim, began, err)
	if err != nil {
		return sb, fmt.Errorf("start sandbox %s: %w", sb.ID, err)
	}
	s.log.InfoContext(ctx, "sandbox started from the warm pool", "sandbox_id", sb.ID, "owner_id", ownerID, "spec_id", spec.ID)
	return running, nil
}

// deliver hands the pooled runtime of sb its session key and environment, authenticated by
// its pool's secret, and checks that it now serves sb.
func (s *Service) deliver(ctx context.Context, sb Sandbox, secret, key string, env map[string]string) error {
	c, err := s.newClient(sb.Instance, secret)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	id, err := c.Deliver(ctx, runtimeclient.DeliverRequest{SessionKey: key, Env: env})
	if err != nil {
		return err
	}
	if id.SandboxID != sb.ID {
		return fmt.Errorf("the runtime serves sandbox %q, want %q", id.SandboxID, sb.ID)
	}
	return nil
}
