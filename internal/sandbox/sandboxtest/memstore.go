package sandboxtest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// MemStore is an in-memory sandbox.Store for tests. It keeps copies, so callers can never
// change a stored record by accident.
type MemStore struct {
	mu          sync.Mutex
	specs       map[string]sandbox.Spec
	sandboxes   map[string]sandbox.Sandbox
	reconcilers map[string]reconciler
}

type reconciler struct {
	holder  string
	expires time.Time
}

var _ sandbox.Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{specs: map[string]sandbox.Spec{}, sandboxes: map[string]sandbox.Sandbox{}, reconcilers: map[string]reconciler{}}
}

// ClaimReconciler gives backend's role to holder for ttl unless another holds it.
func (s *MemStore) ClaimReconciler(_ context.Context, backend, holder string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if r, ok := s.reconcilers[backend]; ok && r.holder != holder && !r.expires.Before(now) {
		return false, nil
	}
	s.reconcilers[backend] = reconciler{holder: holder, expires: now.Add(ttl)}
	return true, nil
}

// PutSpec inserts or replaces a spec.
func (s *MemStore) PutSpec(_ context.Context, spec sandbox.Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs[spec.ID] = cloneSpec(spec)
	return nil
}

// GetSpec returns sandbox.ErrSpecNotFound for an unknown id.
func (s *MemStore) GetSpec(_ context.Context, id string) (sandbox.Spec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec, ok := s.specs[id]
	if !ok {
		return sandbox.Spec{}, fmt.Errorf("get spec %s: %w", id, sandbox.ErrSpecNotFound)
	}
	return cloneSpec(spec), nil
}

// ListSpecs pages through specs by id.
func (s *MemStore) ListSpecs(_ context.Context, q paging.Query) ([]sandbox.Spec, string, error) {
	cur, err := paging.Decode(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	all := make([]sandbox.Spec, 0, len(s.specs))
	for _, spec := range s.specs {
		if cur == nil || spec.ID > cur.ID {
			all = append(all, cloneSpec(spec))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b sandbox.Spec) int { return cmp.Compare(a.ID, b.ID) })
	page, more := cut(all, q.Normalize().Limit)
	if !more {
		return page, "", nil
	}
	last := page[len(page)-1]
	return page, paging.Encode(last.CreatedAt, last.ID), nil
}

// CreateSandbox inserts a record; an existing id is an error, and so is a record past the
// owner's maxLive (ErrLimit).
func (s *MemStore) CreateSandbox(_ context.Context, sb sandbox.Sandbox, maxLive int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sandboxes[sb.ID]; ok {
		return fmt.Errorf("create sandbox %s: id exists", sb.ID)
	}
	if maxLive > 0 {
		n := 0
		for _, other := range s.sandboxes {
			if other.OwnerID == sb.OwnerID && (other.Status == sandbox.StatusStarting || other.Status == sandbox.StatusRunning) {
				n++
			}
		}
		if n >= maxLive {
			return fmt.Errorf("create sandbox %s: %w", sb.ID, sandbox.ErrLimit)
		}
	}
	c := cloneSandbox(sb)
	c.Rev = 0
	s.sandboxes[sb.ID] = c
	return nil
}

// TouchSandboxes moves the records' ActiveAt on to at.
func (s *MemStore) TouchSandboxes(_ context.Context, ids []string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if sb, ok := s.sandboxes[id]; ok && sb.ActiveAt.Before(at) {
			sb.ActiveAt = at
			sb.Rev++
			s.sandboxes[id] = sb
		}
	}
	return nil
}

// AdoptSandboxes sets node on backend's records that have none.
func (s *MemStore) AdoptSandboxes(_ context.Context, backend, node string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, sb := range s.sandboxes {
		if sb.Backend == backend && sb.Node == "" {
			sb.Node = node
			sb.Rev++
			s.sandboxes[id] = sb
			n++
		}
	}
	return n, nil
}

// GetSandbox returns the owner's record; "" reads any owner's.
func (s *MemStore) GetSandbox(_ context.Context, ownerID, id string) (sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok || (ownerID != "" && sb.OwnerID != ownerID) {
		return sandbox.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	return cloneSandbox(sb), nil
}

// SandboxBySessionKeyHash returns the record with that session key digest.
func (s *MemStore) SandboxBySessionKeyHash(_ context.Context, hash []byte) (sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sb := range s.sandboxes {
		if len(hash) > 0 && bytes.Equal(sb.SessionKeyHash, hash) {
			return cloneSandbox(sb), nil
		}
	}
	return sandbox.Sandbox{}, fmt.Errorf("sandbox by session key: %w", sandbox.ErrNotFound)
}

// SetSessionKeyHash writes a record's session key digest.
func (s *MemStore) SetSessionKeyHash(_ context.Context, id string, hash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		return fmt.Errorf("set session key hash of sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	sb.SessionKeyHash = slices.Clone(hash)
	sb.Rev++
	s.sandboxes[id] = sb
	return nil
}

// ListSandboxes pages through the owner's records, newest first.
func (s *MemStore) ListSandboxes(_ context.Context, ownerID string, q paging.Query) ([]sandbox.Sandbox, string, error) {
	cur, err := paging.Decode(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	newestFirst := func(a, b sandbox.Sandbox) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	}
	s.mu.Lock()
	var all []sandbox.Sandbox
	for _, sb := range s.sandboxes {
		if sb.OwnerID != ownerID {
			continue
		}
		if cur != nil && newestFirst(sandbox.Sandbox{CreatedAt: cur.Time, ID: cur.ID}, sb) >= 0 {
			continue
		}
		listed := cloneSandbox(sb)
		listed.Instance = sandbox.Instance{} // as sandbox.Store specifies
		all = append(all, listed)
	}
	s.mu.Unlock()
	slices.SortFunc(all, newestFirst)
	page, more := cut(all, q.Normalize().Limit)
	if !more {
		return page, "", nil
	}
	last := page[len(page)-1]
	return page, paging.Encode(last.CreatedAt, last.ID), nil
}

// ListSandboxVersions lists as ListSandboxes does, naming each record by its version: every
// write to a record increments its Rev, as the stores' triggers do.
func (s *MemStore) ListSandboxVersions(ctx context.Context, ownerID string, q paging.Query) ([]paging.Listed, string, error) {
	sbs, next, err := s.ListSandboxes(ctx, ownerID, q)
	if err != nil {
		return nil, "", err
	}
	ls := make([]paging.Listed, len(sbs))
	for i := range sbs {
		ls[i] = listingcache.ListedRow(listingcache.Sandboxes, &sbs[i])
	}
	return ls, next, nil
}

// SandboxesAt reads the owner's records that ls names as they are now (it keeps no earlier
// versions), leaving out those deleted.
func (s *MemStore) SandboxesAt(_ context.Context, ownerID string, ls []paging.Listed) ([]sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sandbox.Sandbox
	for _, l := range ls {
		if sb, ok := s.sandboxes[l.ID]; ok && sb.OwnerID == ownerID {
			listed := cloneSandbox(sb)
			listed.Instance = sandbox.Instance{} // as sandbox.Store specifies
			out = append(out, listed)
		}
	}
	return out, nil
}

// AllSandboxes returns every record.
func (s *MemStore) AllSandboxes(_ context.Context) ([]sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sandbox.Sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		out = append(out, cloneSandbox(sb))
	}
	slices.SortFunc(out, func(a, b sandbox.Sandbox) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// LiveSandboxes returns the STARTING, RUNNING and PAUSED records.
func (s *MemStore) LiveSandboxes(ctx context.Context) ([]sandbox.Sandbox, error) {
	all, err := s.AllSandboxes(ctx)
	return slices.DeleteFunc(all, func(sb sandbox.Sandbox) bool {
		return sb.Status != sandbox.StatusStarting && sb.Status != sandbox.StatusRunning && sb.Status != sandbox.StatusPaused
	}), err
}

// UpdateSandbox writes status, detail, instance and update time if the status is still prev.
func (s *MemStore) UpdateSandbox(_ context.Context, sb sandbox.Sandbox, prev sandbox.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.sandboxes[sb.ID]
	if !ok || (sb.OwnerID != "" && cur.OwnerID != sb.OwnerID) {
		return fmt.Errorf("update sandbox %s: %w", sb.ID, sandbox.ErrNotFound)
	}
	if cur.Status != prev {
		return fmt.Errorf("update sandbox %s: status is %s, not %s: %w", sb.ID, cur.Status, prev, sandbox.ErrState)
	}
	c := cloneSandbox(sb)
	cur.Status, cur.Detail, cur.Instance, cur.UpdatedAt = c.Status, c.Detail, c.Instance, c.UpdatedAt
	cur.Rev++
	s.sandboxes[sb.ID] = cur
	return nil
}

// DeleteSandbox removes a record.
func (s *MemStore) DeleteSandbox(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sandboxes[id]; !ok {
		return fmt.Errorf("delete sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	delete(s.sandboxes, id)
	return nil
}

// CountSandboxes counts the owner's records in any of statuses.
func (s *MemStore) CountSandboxes(_ context.Context, ownerID string, statuses ...sandbox.Status) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sb := range s.sandboxes {
		if sb.OwnerID == ownerID && slices.Contains(statuses, sb.Status) {
			n++
		}
	}
	return n, nil
}

func cut[T any](all []T, limit int) ([]T, bool) {
	if len(all) > limit {
		return all[:limit], true
	}
	return all, false
}

func cloneSandbox(sb sandbox.Sandbox) sandbox.Sandbox {
	sb.SessionKeySealed = slices.Clone(sb.SessionKeySealed)
	sb.SessionKeyHash = slices.Clone(sb.SessionKeyHash)
	sb.Instance.State = slices.Clone(sb.Instance.State)
	return sb
}

func cloneSpec(spec sandbox.Spec) sandbox.Spec {
	spec.Command = slices.Clone(spec.Command)
	spec.InitialEnv = maps.Clone(spec.InitialEnv)
	return spec
}
