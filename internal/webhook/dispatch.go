package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/netpolicy"
)

// pruneEvery is how often old deliveries are removed.
const pruneEvery = time.Hour

// idleWait is the longest the dispatcher sleeps with nothing due: long, since a new delivery
// wakes it.
const idleWait = time.Minute

// heldWait is how long the dispatcher sleeps when deliveries are due but a cap holds them
// back: an attempt of its own that ends wakes it at once, and this is how soon it sees that
// another replica's attempt ended.
const heldWait = time.Second

// Start starts the dispatcher, which sends every pending delivery that is due, those a
// previous process left included. Call it once.
func (s *Service) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.cancel, s.done = cancel, make(chan struct{})
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		s.dispatch(ctx)
	}()
}

// Close stops the dispatcher and waits for the attempts under way. Safe to call twice, and
// without Start.
func (s *Service) Close() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (s *Service) dispatch(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, s.o.Workers)
	var inflightMu sync.Mutex
	inflight := map[string]bool{}
	var lastPrune time.Time
	for ctx.Err() == nil {
		now := s.o.Now()
		if now.Sub(lastPrune) >= pruneEvery {
			lastPrune = now
			if n, err := s.o.Store.PruneDeliveries(ctx, now.Add(-s.o.Retention)); err != nil && ctx.Err() == nil {
				s.log.Error("webhook: prune deliveries", "err", err)
			} else if n > 0 {
				s.log.Debug("webhook: pruned deliveries", "count", n)
			}
		}
		free := cap(slots) - len(slots)
		if free > 0 {
			// A claim lapses after twice the attempt's time bound: a process that died
			// mid-attempt leaves the delivery due again then. This one skips a delivery
			// it is still trying.
			ds, err := s.o.Store.ClaimDeliveries(ctx, Claim{Now: now, LeaseUntil: now.Add(2 * s.o.Timeout), Limit: free,
				PerUser: s.o.PerUser, PerEndpoint: s.o.PerEndpoint})
			if err != nil && ctx.Err() == nil {
				s.log.Error("webhook: claim deliveries", "err", err)
			}
			for _, d := range ds {
				inflightMu.Lock()
				busy := inflight[d.ID]
				inflight[d.ID] = true
				inflightMu.Unlock()
				if busy {
					continue
				}
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.attempt(ctx, d)
					inflightMu.Lock()
					delete(inflight, d.ID)
					inflightMu.Unlock()
					<-slots
					s.poke()
				}()
			}
			if len(ds) == free {
				continue // more may be due
			}
		}
		wait := idleWait
		if free > 0 {
			next, err := s.o.Store.NextDeliveryAt(ctx)
			if err != nil && ctx.Err() == nil {
				s.log.Error("webhook: next delivery", "err", err)
			}
			if !next.IsZero() {
				due := next.Sub(s.o.Now())
				if due <= 0 {
					// Due and not claimed: a cap holds it back until an attempt ends.
					due = heldWait
				}
				wait = min(wait, due)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// attempt sends d once and records the outcome. An attempt cut short by Close is not
// recorded: its claim lapses and the next process sends it again.
func (s *Service) attempt(ctx context.Context, d Delivery) {
	log := s.log.With("webhook_id", d.WebhookID, "delivery_id", d.ID, "kind", d.Kind)
	w, err := s.o.Store.GetWebhook(ctx, d.OwnerID, d.WebhookID)
	if errors.Is(err, ErrNotFound) {
		return // deleted with its deliveries
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Error("webhook: read webhook", "err", err)
		}
		return
	}
	code, problem, timedOut := s.post(ctx, w, d)
	if ctx.Err() != nil {
		return
	}
	now := s.o.Now().UTC()
	s.endpointOutcome(ctx, w, d, now, timedOut)
	d.Attempts++
	d.ResponseCode, d.Error, d.UpdatedAt = code, problem, now
	switch next := now.Add(s.backoff(d.Attempts)); {
	case problem == "":
		d.Status, d.NextAttemptAt = StatusDelivered, time.Time{}
	case next.After(d.RetryUntil):
		d.Status, d.NextAttemptAt = StatusFailed, time.Time{}
		log.Warn("webhook: delivery failed; no more retries", "attempts", d.Attempts, "err", problem)
	default:
		d.Status, d.NextAttemptAt = StatusPending, next
		log.Info("webhook: delivery attempt failed; retrying", "attempts", d.Attempts, "err", problem, "next_attempt_at", next)
	}
	if err := s.o.Store.UpdateDelivery(context.WithoutCancel(ctx), d); err != nil && !errors.Is(err, ErrNotFound) {
		log.Error("webhook: record attempt", "err", err)
	}
}

// endpointOutcome records whether the attempt of d to its endpoint timed out: an endpoint
// that keeps timing out is paused (endpointPause), so that it holds nobody's attempts, its
// own user's included, most of the time; any other outcome ends its pause.
func (s *Service) endpointOutcome(ctx context.Context, w Webhook, d Delivery, now time.Time, timedOut bool) {
	endpoint := d.Endpoint
	if endpoint == "" {
		endpoint = EndpointOf(w.URL)
	}
	ctx = context.WithoutCancel(ctx)
	var err error
	switch {
	case timedOut:
		err = s.o.Store.EndpointTimedOut(ctx, d.OwnerID, endpoint, now, s.endpointPause)
	case d.EndpointTimeouts > 0:
		err = s.o.Store.EndpointAnswered(ctx, d.OwnerID, endpoint)
	}
	if err != nil {
		s.log.Error("webhook: record the endpoint's outcome", "webhook_id", w.ID, "err", err)
	}
}

// endpointPause is how long nothing is sent to an endpoint after its n-th timeout in a row:
// twice the attempt's bound, doubling with each timeout, up to MaxBackoff.
func (s *Service) endpointPause(n int) time.Duration {
	p := 2 * s.o.Timeout
	for i := 1; i < n && p < s.o.MaxBackoff; i++ {
		p *= 2
	}
	return min(p, s.o.MaxBackoff)
}

// backoff is the wait after the attempts-th failed attempt.
func (s *Service) backoff(attempts int) time.Duration {
	b := s.o.FirstRetry
	for i := 1; i < attempts && b < s.o.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, s.o.MaxBackoff)
}

// post sends the delivery and returns the answer's status and, when it is not a success, why
// (in words fit for the owner: never a secret), and whether it failed for want of an answer
// in time.
func (s *Service) post(ctx context.Context, w Webhook, d Delivery) (int, string, bool) {
	sec, err := s.o.Sealer.Open(w.SecretSealed)
	if err != nil {
		s.log.Error("webhook: open secret", "webhook_id", w.ID, "err", err)
		return 0, "agentd could not read the webhook's secret; the server log has the cause", false
	}
	base, err := s.o.Client(ctx, d.OwnerID)
	if err != nil {
		s.log.Error("webhook: HTTP client", "webhook_id", w.ID, "err", err)
		return 0, "agentd could not prepare the request; the server log has the cause", false
	}
	hc := *base
	hc.Timeout = 0
	// A redirect is an answer, not a new target: following it would send the event
	// somewhere the owner never registered.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	actx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, "the URL cannot be requested", false
	}
	ts := s.o.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.o.UserAgent)
	req.Header.Set(HeaderEvent, d.Kind)
	req.Header.Set(HeaderDelivery, d.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(string(sec), ts, d.Payload))
	resp, err := hc.Do(req)
	if err != nil {
		var refused *netpolicy.RefusedError
		switch {
		case errors.As(err, &refused):
			return 0, refused.Explain("the webhook's host"), false
		case errors.Is(actx.Err(), context.DeadlineExceeded):
			return 0, fmt.Sprintf("no answer within %s", s.o.Timeout), true
		}
		return 0, "could not connect: " + errText(err), false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Sprintf("the endpoint answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)), false
	}
	return resp.StatusCode, "", false
}

// errText is a transport error without the request's method and URL, which the owner knows.
func errText(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
