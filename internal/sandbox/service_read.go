package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// waitRecheck is how often WaitRunning reads the store even without a notification, for
// changes this service did not make.
const waitRecheck = time.Second

// Get returns the owner's sandbox.
func (s *Service) Get(ctx context.Context, ownerID, id string) (Sandbox, error) {
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	return sb, nil
}

// GetMany returns the owner's sandboxes with the given ids, in that order, with nil for an id
// that does not exist or belongs to someone else.
func (s *Service) GetMany(ctx context.Context, ownerID string, ids []string) ([]*Sandbox, error) {
	out := make([]*Sandbox, len(ids))
	for i, id := range ids {
		sb, err := s.store.GetSandbox(ctx, ownerID, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get sandbox %s: %w", id, err)
		}
		out[i] = &sb
	}
	return out, nil
}

// Search pages through the owner's sandboxes, newest first.
func (s *Service) Search(ctx context.Context, ownerID string, q paging.Query) ([]Sandbox, string, error) {
	sbs, next, err := s.store.ListSandboxes(ctx, ownerID, q.Normalize())
	if err != nil {
		return nil, "", fmt.Errorf("search sandboxes: %w", err)
	}
	return sbs, next, nil
}

// SearchVersions and At are Search in two halves (Store.ListSandboxVersions,
// Store.SandboxesAt).
func (s *Service) SearchVersions(ctx context.Context, ownerID string, q paging.Query) ([]paging.Listed, string, error) {
	ls, next, err := s.store.ListSandboxVersions(ctx, ownerID, q.Normalize())
	if err != nil {
		return nil, "", fmt.Errorf("search sandboxes: %w", err)
	}
	return ls, next, nil
}

func (s *Service) At(ctx context.Context, ownerID string, ls []paging.Listed) ([]Sandbox, error) {
	sbs, err := s.store.SandboxesAt(ctx, ownerID, ls)
	if err != nil {
		return nil, fmt.Errorf("search sandboxes: %w", err)
	}
	return sbs, nil
}

// WaitRunning returns as soon as the sandbox is RUNNING. It fails when the sandbox is (or
// becomes) ERROR or MISSING, when it is deleted, and when ctx ends. A PAUSED sandbox is
// waited for: someone may be resuming it.
func (s *Service) WaitRunning(ctx context.Context, ownerID, id string) (Sandbox, error) {
	for {
		changed := s.changes.changed(id) // before the read, so no change is missed
		sb, err := s.store.GetSandbox(ctx, ownerID, id)
		if err != nil {
			return Sandbox{}, fmt.Errorf("wait for sandbox %s: %w", id, err)
		}
		switch sb.Status {
		case StatusRunning:
			return sb, nil
		case StatusError, StatusMissing:
			return sb, fmt.Errorf("wait for sandbox %s: %w", id, &NotRunningError{ID: id, Status: sb.Status, Detail: sb.Detail})
		}
		select {
		case <-changed:
		case <-time.After(waitRecheck):
		case <-ctx.Done():
			return sb, fmt.Errorf("wait for sandbox %s: %w", id, ctx.Err())
		}
	}
}

// SessionKey returns the key that the sandbox's runtime demands.
func (s *Service) SessionKey(ctx context.Context, ownerID, id string) (string, error) {
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return "", fmt.Errorf("session key of sandbox %s: %w", id, err)
	}
	return s.sessionKey(sb)
}

// Client returns a client of the sandbox's runtime. Only a RUNNING sandbox has one that
// answers; any other status is ErrState.
func (s *Service) Client(ctx context.Context, ownerID, id string) (*runtimeclient.Client, error) {
	unlock := s.locks.lock(id) // see Hold
	defer unlock()
	sb, err := s.store.GetSandbox(ctx, ownerID, id)
	if err != nil {
		return nil, fmt.Errorf("runtime client of sandbox %s: %w", id, err)
	}
	if err := errors.Join(needStatus(sb, StatusRunning, "reached"), s.elsewhere(sb)); err != nil {
		return nil, fmt.Errorf("runtime client of sandbox %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActive[id] = s.now()
	if c := s.clients[id]; c != nil && c.Endpoint() == sb.Instance.Endpoint {
		return c, nil
	}
	key, err := s.sessionKey(sb)
	if err != nil {
		return nil, err
	}
	c, err := s.newClient(sb.Instance, key)
	if err != nil {
		return nil, fmt.Errorf("runtime client of sandbox %s: %w", id, err)
	}
	if !s.closed {
		s.clients[id] = c
	}
	return c, nil
}

// newClient returns a client of the runtime of inst, through the backend's transport if it
// supplies one (Transporter).
func (s *Service) newClient(inst Instance, key string) (*runtimeclient.Client, error) {
	t, ok := s.backend.(Transporter)
	if !ok {
		return runtimeclient.NewClient(inst.Endpoint, key)
	}
	tr, err := t.Transport(inst)
	if err != nil {
		return nil, fmt.Errorf("transport to the runtime of sandbox %s: %w", inst.ID, err)
	}
	return runtimeclient.NewClientWith(inst.Endpoint, key, tr)
}

// keepClient caches c, a client of the runtime of sb that has just had an answer, as the
// client of sb (Client), unless one of the same endpoint is there already; the caller holds
// sb's lock and sb is RUNNING.
func (s *Service) keepClient(sb Sandbox, c *runtimeclient.Client) {
	s.mu.Lock()
	old := s.clients[sb.ID]
	keep := !s.closed && (old == nil || old.Endpoint() != c.Endpoint())
	if keep {
		s.clients[sb.ID] = c
	}
	s.mu.Unlock()
	switch {
	case !keep:
		c.CloseIdleConnections()
	case old != nil:
		old.CloseIdleConnections()
	}
}

// dropClient forgets the cached client of sandbox id.
func (s *Service) dropClient(id string) {
	s.mu.Lock()
	c := s.clients[id]
	delete(s.clients, id)
	delete(s.lastActive, id)
	s.mu.Unlock()
	if c != nil {
		c.CloseIdleConnections()
	}
}

// GetSpec returns one spec.
func (s *Service) GetSpec(ctx context.Context, id string) (Spec, error) {
	spec, err := s.store.GetSpec(ctx, id)
	if err != nil {
		return Spec{}, fmt.Errorf("get sandbox spec %s: %w", id, err)
	}
	return spec, nil
}

// GetSpecs returns the specs with the given ids, in that order, nil for unknown ones.
func (s *Service) GetSpecs(ctx context.Context, ids []string) ([]*Spec, error) {
	out := make([]*Spec, len(ids))
	for i, id := range ids {
		spec, err := s.store.GetSpec(ctx, id)
		if errors.Is(err, ErrSpecNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get sandbox spec %s: %w", id, err)
		}
		out[i] = &spec
	}
	return out, nil
}

// ListSpecs pages through the specs by id.
func (s *Service) ListSpecs(ctx context.Context, q paging.Query) ([]Spec, string, error) {
	specs, next, err := s.store.ListSpecs(ctx, q.Normalize())
	if err != nil {
		return nil, "", fmt.Errorf("list sandbox specs: %w", err)
	}
	return specs, next, nil
}

// CheckBackend reports whether the backend can start sandboxes now (see Checker); a backend
// that cannot tell is taken to work.
func (s *Service) CheckBackend(ctx context.Context) error {
	if c, ok := s.backend.(Checker); ok {
		return c.Check(ctx)
	}
	return nil
}
