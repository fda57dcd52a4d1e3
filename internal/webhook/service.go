package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
)

// Defaults of Options.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultFirstRetry = 10 * time.Second
	DefaultMaxBackoff = time.Hour
	DefaultRetryFor   = 24 * time.Hour
	DefaultRetention  = 7 * 24 * time.Hour
	// A dispatcher makes up to DefaultWorkers attempts at once; of all the attempts under
	// way, on every replica together, a user has at most DefaultPerUser and one endpoint of
	// a user's DefaultPerEndpoint, so that a user whose endpoints hang holds at most a
	// quarter of a dispatcher and everyone else's deliveries go out meanwhile.
	DefaultWorkers     = 16
	DefaultPerUser     = 4
	DefaultPerEndpoint = 2
)

// Options configure a Service. Store and Sealer are required.
type Options struct {
	Store  Store
	Sealer secret.Sealer
	Logger *slog.Logger
	Now    func() time.Time
	NewID  func() string
	// CheckURL checks a URL the owner registers against the URL policy (for a non-admin, no
	// internal address); its error says why it is refused. nil accepts every URL.
	CheckURL func(ctx context.Context, ownerID, rawURL string) error
	// Client is the HTTP client deliveries to the owner's URLs go through: the URL policy's
	// for that owner, checked on every connection. nil means http.DefaultClient.
	Client func(ctx context.Context, ownerID string) (*http.Client, error)
	// ConversationExists says whether the owner has a conversation, which a webhook may be
	// limited to. nil accepts every id.
	ConversationExists func(ctx context.Context, ownerID, id string) (bool, error)
	// SandboxConversations lists the owner's conversations that use a sandbox, which a
	// sandbox's event is about. nil leaves sandbox events about none.
	SandboxConversations func(ctx context.Context, ownerID, sandboxID string) ([]string, error)
	// Timeout bounds one attempt, connection included.
	Timeout time.Duration
	// FirstRetry is the wait after the first failed attempt; each later wait doubles, up to
	// MaxBackoff. RetryFor bounds the retries, counted from the delivery's creation (or its
	// redelivery).
	FirstRetry time.Duration
	MaxBackoff time.Duration
	RetryFor   time.Duration
	// Retention is how long delivered and failed deliveries stay listed.
	Retention time.Duration
	// Workers is how many deliveries this dispatcher has under way at once.
	Workers int
	// PerUser and PerEndpoint bound the attempts under way of one user, and to one endpoint
	// of a user's (EndpointOf), across every dispatcher on the store.
	PerUser, PerEndpoint int
	// UserAgent is sent with every delivery.
	UserAgent string
}

// Service keeps users' webhooks and delivers their events. Safe for concurrent use.
//
// Lifecycle: NewService, then Start (which resumes the deliveries a previous process left
// pending), then Close, which stops the dispatcher and waits for the attempts under way; an
// attempt cut short is tried again by the next process.
type Service struct {
	o   Options
	log *slog.Logger

	wake chan struct{}

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewService returns a Service.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = id.New
	}
	if o.Client == nil {
		o.Client = func(context.Context, string) (*http.Client, error) { return http.DefaultClient, nil }
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.FirstRetry <= 0 {
		o.FirstRetry = DefaultFirstRetry
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.PerUser <= 0 {
		o.PerUser = DefaultPerUser
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = DefaultPerEndpoint
	}
	if o.UserAgent == "" {
		o.UserAgent = "agentd-webhooks"
	}
	return &Service{o: o, log: o.Logger, wake: make(chan struct{}, 1)}
}

// InvalidError is a request that cannot be registered; Field names what is wrong.
type InvalidError struct {
	Field string
	Msg   string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Msg }

// CreateRequest is what a user registers.
type CreateRequest struct {
	URL            string
	Kinds          []string
	ConversationID string
	Description    string
}

// Create registers a webhook and returns it with its secret, which is shown only now.
func (s *Service) Create(ctx context.Context, ownerID string, r CreateRequest) (Webhook, string, error) {
	u, err := url.Parse(strings.TrimSpace(r.URL))
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "":
		return Webhook{}, "", &InvalidError{Field: "url", Msg: "want an absolute http or https URL"}
	case u.Scheme != "http" && u.Scheme != "https":
		return Webhook{}, "", &InvalidError{Field: "url", Msg: "the scheme must be http or https"}
	case u.User != nil:
		return Webhook{}, "", &InvalidError{Field: "url", Msg: "credentials do not belong in the URL: verify the signature instead"}
	case u.Fragment != "":
		return Webhook{}, "", &InvalidError{Field: "url", Msg: "the URL has a fragment"}
	}
	if s.o.CheckURL != nil {
		if err := s.o.CheckURL(ctx, ownerID, u.String()); err != nil {
			return Webhook{}, "", &InvalidError{Field: "url", Msg: err.Error()}
		}
	}
	kinds := []string{}
	for _, k := range r.Kinds {
		if k != KindAll && !slices.Contains(Kinds, k) {
			return Webhook{}, "", &InvalidError{Field: "events", Msg: fmt.Sprintf("unknown kind %q", k)}
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return Webhook{}, "", &InvalidError{Field: "events", Msg: "name at least one kind, or *"}
	}
	if r.ConversationID != "" && s.o.ConversationExists != nil {
		ok, err := s.o.ConversationExists(ctx, ownerID, r.ConversationID)
		if err != nil {
			return Webhook{}, "", fmt.Errorf("create webhook: %w", err)
		}
		if !ok {
			return Webhook{}, "", &InvalidError{Field: "conversation_id", Msg: "conversation not found"}
		}
	}
	sec := NewSecret()
	sealed, err := s.o.Sealer.Seal([]byte(sec))
	if err != nil {
		return Webhook{}, "", fmt.Errorf("create webhook: seal its secret: %w", err)
	}
	w := Webhook{ID: s.o.NewID(), OwnerID: ownerID, URL: u.String(), Kinds: kinds,
		ConversationID: r.ConversationID, Description: strings.TrimSpace(r.Description),
		SecretSealed: sealed, CreatedAt: s.o.Now().UTC()}
	if err := s.o.Store.CreateWebhook(ctx, w, MaxPerUser); err != nil {
		return Webhook{}, "", fmt.Errorf("create webhook: %w", err)
	}
	return w, sec, nil
}

// Get returns one of the owner's webhooks.
func (s *Service) Get(ctx context.Context, ownerID, id string) (Webhook, error) {
	return s.o.Store.GetWebhook(ctx, ownerID, id)
}

// List returns the owner's webhooks, oldest first.
func (s *Service) List(ctx context.Context, ownerID string) ([]Webhook, error) {
	return s.o.Store.ListWebhooks(ctx, ownerID)
}

// Delete removes one of the owner's webhooks with its deliveries: none is tried again.
func (s *Service) Delete(ctx context.Context, ownerID, id string) error {
	return s.o.Store.DeleteWebhook(ctx, ownerID, id)
}

// Deliveries pages through a webhook's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, ownerID, webhookID string, status Status, q paging.Query) ([]Delivery, string, error) {
	if _, err := s.o.Store.GetWebhook(ctx, ownerID, webhookID); err != nil {
		return nil, "", err
	}
	return s.o.Store.ListDeliveries(ctx, ownerID, webhookID, status, q)
}

// Redeliver queues a delivery again, due now, with a new retry period; its id stays, so a
// receiver that had it already can tell.
func (s *Service) Redeliver(ctx context.Context, ownerID, webhookID, deliveryID string) (Delivery, error) {
	d, err := s.o.Store.GetDelivery(ctx, ownerID, webhookID, deliveryID)
	if err != nil {
		return Delivery{}, err
	}
	now := s.o.Now().UTC()
	d.Status, d.NextAttemptAt, d.RetryUntil, d.UpdatedAt = StatusPending, now, now.Add(s.o.RetryFor), now
	if err := s.o.Store.UpdateDelivery(ctx, d); err != nil {
		return Delivery{}, err
	}
	s.poke()
	return d, nil
}

// poke wakes the dispatcher.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
