package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// Shared warm pools. The pools of pool.go live in one service's memory, which is right for a
// node-local backend, whose sandboxes only their node's replica reaches. A remote backend's
// sandboxes are reached by every replica, and so are its pooled ones: their pool is kept in
// the backend's own objects (the cluster), where every replica sees it, and the backend makes
// each change of a member (ready, claimed, retired) one atomic step that a concurrent change
// makes fail. Then:
//
//   - a start on any replica claims a ready member: it records the sandbox under the member's
//     id first (so that, from then on, the member is never taken for an orphan), then claims
//     it in the backend, which fails if another claim or a retirement got there first (the
//     start then deletes its record and tries another member, or starts cold), and only then
//     delivers the session key and the environment, as from a pool of this service;
//   - one replica at a time, the one that reconciles the backend's sandboxes
//     (Store.ClaimReconciler), fills the pools, marks what it started ready once its runtime
//     answers, and retires (then destroys) what the pools should not hold: members of a spec
//     changed since or no longer pooled, members beyond a pool's size, and members left
//     unready by a replica that stopped while it started them;
//   - a replica that stops leaves the pools as they are: they are the installation's, and the
//     next reconciling replica keeps them.

// SharedPools is implemented by remote backends (Capabilities.Remote and Pool) that keep warm
// pools in their own objects, for every replica (see above). All methods may be called
// concurrently, from any replica; Claim, Retire and MarkReady fail with ErrPoolTaken when a
// concurrent change of the member got there first.
type SharedPools interface {
	// PoolMembers lists the members of this installation's pools: sandboxes started with a
	// PoolSecret and neither claimed nor retired since, ready or not.
	PoolMembers(ctx context.Context) ([]PoolMember, error)
	// MarkReady makes a member, whose runtime answers, claimable.
	MarkReady(ctx context.Context, inst Instance) error
	// Claim takes m out of its pool for req's owner, as the member was when listed: it fails
	// with ErrPoolTaken when m changed since (claimed, retired). From then on the sandbox is
	// like one started with req's owner, spec and session key (a resumed one runs so), but
	// its runtime holds the key only once the service delivers it.
	Claim(ctx context.Context, m PoolMember, req ClaimRequest) error
	// Retire takes m out of its pool to be destroyed, as Claim does for an owner.
	Retire(ctx context.Context, m PoolMember) error
}

// ErrPoolTaken: another claim or a retirement took the pool member first.
var ErrPoolTaken = errors.New("the pooled sandbox was taken by another")

// PoolMember is a pooled sandbox of a SharedPools backend.
type PoolMember struct {
	Instance Instance
	// Pool is the id of the spec it started from, Digest that spec's digest then.
	Pool, Digest string
	// Ready: its runtime answered; a start may claim it.
	Ready bool
	// Secret is its runtime's pool secret, with which the claim delivers.
	Secret string
	// Version is the backend's version of the member when it was listed; Claim and Retire
	// fail if it changed since.
	Version string
}

// ClaimRequest is what a claimed sandbox is from then on.
type ClaimRequest struct {
	OwnerID    string
	Spec       Spec
	SessionKey string
}

// errLostClaim: the member a start chose was taken by another replica; the start tries
// another.
var errLostClaim = errors.New("lost the claim")

// claimTries bounds the members one start tries to claim before it starts cold.
const claimTries = 3

// claimShared starts a sandbox from a member of spec's shared pool. ok is false when it found
// none it could claim: the caller starts one cold.
func (s *Service) claimShared(ctx context.Context, ownerID string, spec Spec, key string, sealed []byte) (sb Sandbox, ok bool, err error) {
	digest := specDigest(spec)
	ms, err := s.shared.PoolMembers(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "list the warm pools: starting cold", "err", err)
		return Sandbox{}, false, nil
	}
	ms = slices.DeleteFunc(ms, func(m PoolMember) bool { return !m.Ready || m.Pool != spec.ID || m.Digest != digest })
	// Replicas starting at once take different members, mostly.
	rand.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	for _, m := range ms[:min(len(ms), claimTries)] {
		sb, err := s.startClaimed(ctx, ownerID, spec, poolMember{inst: m.Instance, secret: m.Secret, digest: digest}, key, sealed, &m)
		if errors.Is(err, errLostClaim) {
			s.log.DebugContext(ctx, "pooled sandbox taken by another start", "sandbox_id", m.Instance.ID, "err", err)
			continue
		}
		s.pools.setShared(spec.ID, len(ms)-1)
		return sb, true, err
	}
	return Sandbox{}, false, nil
}

// fillSharedOnce makes one pass over the shared pools: it retires what they should not hold
// and starts what they lack. The members it starts are ready or destroyed when it returns, so
// a member it finds unready was started by another replica, which stopped or lost the role.
func (s *Service) fillSharedOnce(ctx context.Context) error {
	ms, err := s.shared.PoolMembers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	specs := map[string]Spec{}
	for _, id := range slices.Sorted(maps.Keys(s.pools.sizes)) {
		spec, err := s.store.GetSpec(ctx, id)
		if err == nil {
			if c, ok := s.backend.(SpecChecker); ok {
				err = c.CheckSpec(spec)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pool of spec %q: %w", id, err))
			continue
		}
		specs[id] = spec
	}
	ready := map[string]int{}
	for _, m := range ms {
		spec, pooled := specs[m.Pool]
		var why string
		switch {
		case !pooled:
			why = "its spec has no pool"
		case m.Digest != specDigest(spec):
			why = "its spec changed"
		case !m.Ready:
			why = "the replica that started it stopped"
		case ready[m.Pool] >= s.pools.sizes[m.Pool]:
			why = "its pool is full"
		default:
			ready[m.Pool]++
			continue
		}
		s.retire(ctx, m, why)
	}
	for _, id := range slices.Sorted(maps.Keys(specs)) {
		spec := specs[id]
		digest := specDigest(spec)
		for ready[id] < s.pools.sizes[id] && ctx.Err() == nil {
			m, err := s.startMember(ctx, spec, digest)
			if err == nil {
				if err = s.shared.MarkReady(ctx, m.inst); err != nil {
					s.destroyMember(m, "it could not be made ready")
					err = fmt.Errorf("make pooled sandbox %s ready: %w", m.inst.ID, err)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("pool of spec %q: %w", id, err))
				break
			}
			ready[id]++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.pools.sizes)) {
		s.pools.setShared(id, ready[id])
		s.metrics.PoolSize(s.backend.Name(), id, ready[id])
	}
	return errors.Join(errs...)
}

// retire takes m out of its pool and destroys it; a member claimed meanwhile is left alone.
func (s *Service) retire(ctx context.Context, m PoolMember, why string) {
	if err := s.shared.Retire(ctx, m); err != nil {
		if !errors.Is(err, ErrPoolTaken) {
			s.log.Error("retire pooled sandbox", "sandbox_id", m.Instance.ID, "why", why, "err", err)
		}
		return
	}
	s.destroyMember(poolMember{inst: m.Instance}, why)
}

// withoutMembers returns insts, listed by the backend, without the shared pools' members,
// which have no records but are no orphans: they are listed after insts, so a member found
// then is a member still, or claimed (and recorded first), or retired (to be destroyed
// anyway).
func (s *Service) withoutMembers(ctx context.Context, insts []Instance) ([]Instance, error) {
	if s.shared == nil {
		return insts, nil
	}
	ms, err := s.shared.PoolMembers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the warm pools: %w", err)
	}
	ids := make(map[string]bool, len(ms))
	for _, m := range ms {
		ids[m.Instance.ID] = true
	}
	return slices.DeleteFunc(insts, func(inst Instance) bool { return ids[inst.ID] }), nil
}
