package gitproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// Remotes resolves a user's repository to its upstream and credentials.
// gitprovider.Service implements it; tests use a loopback git server.
type Remotes interface {
	// Remote returns where repository lives at provider ("" means the first of the user's
	// providers that reaches it) and how to authenticate to it. Its errors are worded for
	// the user.
	Remote(ctx context.Context, userID, provider, repository string) (gitprovider.Remote, error)
}

// Repository is a repository a conversation works on.
type Repository struct {
	// Provider is the conversation's git_provider; empty matches any.
	Provider string
	// Name is owner/name.
	Name string
}

// Options configure a Service.
type Options struct {
	Remotes Remotes
	// Repositories lists the repositories of the conversations that use a sandbox: git in
	// the sandbox reaches those and no others.
	Repositories func(ctx context.Context, ownerID, sandboxID string) ([]Repository, error)
	// Runtime returns a client of the sandbox's runtime once it runs, waiting while it
	// starts or is paused. An error that wraps sandbox.ErrNotFound or a
	// *sandbox.NotRunningError means it will not run again.
	Runtime func(ctx context.Context, ownerID, sandboxID string) (*runtimeclient.Client, error)
	// HTTP returns the client for the user's upstream requests: the URL policy's, since a
	// user may name the host (an enterprise provider).
	HTTP func(ctx context.Context, userID string) (*http.Client, error)
	// Logger receives the proxy's log; nil discards it. No token reaches it.
	Logger *slog.Logger
}

// Service keeps the git channels of sandboxes and proxies their git requests. Safe for
// concurrent use; Close stops every channel and waits for them.
type Service struct {
	o      Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	channels map[string]*channel // sandbox id → its channel
}

// NewService returns a Service.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{o: o, log: o.Logger, ctx: ctx, cancel: cancel, channels: map[string]*channel{}}
}

// Close stops every channel and waits for them to end. Safe to call twice.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// Keep makes sure the sandbox's channel is kept open, without waiting for it.
func (s *Service) Keep(ownerID, sandboxID string) {
	s.keep(ownerID, sandboxID)
}

// Attach keeps the sandbox's channel open and returns, once it has been open, the base URL
// under which git in the sandbox reaches the proxy (http://127.0.0.1:PORT); see Path. The
// URL stays the same for the runtime's life.
func (s *Service) Attach(ctx context.Context, ownerID, sandboxID string) (string, error) {
	ch := s.keep(ownerID, sandboxID)
	select {
	case <-ch.opened:
		return "http://" + ch.addr, nil
	case <-ch.done:
		return "", fmt.Errorf("git channel of sandbox %s: %w", sandboxID, ch.err)
	case <-ctx.Done():
		return "", fmt.Errorf("git channel of sandbox %s: %w", sandboxID, ctx.Err())
	}
}

// keep returns the sandbox's channel, starting its keeper unless one runs.
func (s *Service) keep(ownerID, sandboxID string) *channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.channels[sandboxID]; ch != nil {
		return ch
	}
	ch := &channel{owner: ownerID, sandbox: sandboxID, opened: make(chan struct{}), done: make(chan struct{})}
	if s.ctx.Err() != nil {
		ch.err = errors.New("the server is stopping")
		close(ch.done)
		return ch
	}
	s.channels[sandboxID] = ch
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ch.err = s.run(s.ctx, ch)
		s.mu.Lock()
		delete(s.channels, sandboxID)
		s.mu.Unlock()
		close(ch.done)
	}()
	return ch
}

// match reports whether t names a repository of the sandbox's conversations.
func (s *Service) match(ctx context.Context, ownerID, sandboxID string, t target) (bool, error) {
	repos, err := s.o.Repositories(ctx, ownerID, sandboxID)
	if err != nil {
		return false, err
	}
	for _, r := range repos {
		if (r.Provider == "" || r.Provider == t.Provider) && strings.EqualFold(r.Name, t.Repository) {
			return true, nil
		}
	}
	return false, nil
}

// retryAfter is how long a keeper waits after a failure, doubling up to maxRetryAfter.
const (
	retryAfter    = 100 * time.Millisecond
	maxRetryAfter = 10 * time.Second
)
