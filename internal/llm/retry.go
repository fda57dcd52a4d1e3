package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how WithRetry retries. The zero value is the default policy.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts, the first included; 0 means 5.
	MaxAttempts int
	// BaseDelay is the backoff before the first retry, doubled for each later one; 0 means 1s.
	BaseDelay time.Duration
	// MaxDelay caps every wait, a server's Retry-After included; 0 means 30s.
	MaxDelay time.Duration
	// Jitter picks the wait from the backoff ceiling d; nil means full jitter, uniform in
	// [0, d]. Tests pass func(d time.Duration) time.Duration { return d } for exact waits.
	Jitter func(d time.Duration) time.Duration
	// Sleep waits d or until ctx is done, returning ctx.Err() then; nil means a timer.
	// Tests inject one that records the waits and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, is told about each failed attempt that will be retried, before the
	// wait: for logging, or for telling the user that the provider is struggling.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// Default retry settings.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = time.Second
	DefaultMaxDelay    = 30 * time.Second
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.Jitter == nil {
		p.Jitter = fullJitter
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait returns how long to wait before retry number n (1-based) after err: the server's
// Retry-After when it sent one, else exponential backoff with jitter; MaxDelay caps both.
func (p RetryPolicy) wait(n int, err *Error) time.Duration {
	if err.RetryAfter > 0 {
		return min(err.RetryAfter, p.MaxDelay)
	}
	ceiling := p.MaxDelay
	if n-1 < 30 { // beyond that the shift overflows; the cap applies anyway
		ceiling = min(p.BaseDelay<<(n-1), p.MaxDelay)
	}
	return min(max(p.Jitter(ceiling), 0), p.MaxDelay)
}

// RetryError is the failure of a call that was retried: the number of attempts made and the
// error that ended them, an *Error when the attempts ran out or a non-retryable error came,
// or the context's error when the caller gave up while waiting.
type RetryError struct {
	Attempts int
	Err      error
}

func (e *RetryError) Error() string {
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("llm: stopped after %d attempts: %v", e.Attempts, e.Err)
	}
	return fmt.Sprintf("llm: gave up after %d attempts: %v", e.Attempts, e.Err)
}

func (e *RetryError) Unwrap() error { return e.Err }

// WithRetry returns a Client that retries c's retryable failures (Error.Retryable) with
// exponential backoff and full jitter, honouring the provider's Retry-After up to MaxDelay.
//
// A first attempt that fails with a non-retryable error returns that error unchanged. Once a
// retry has been made, or when MaxAttempts is 1 and the error was retryable, the error is a
// *RetryError that says how many attempts were made. Cancelling ctx stops the wait at once.
// The returned Client is safe for concurrent use if c is.
func WithRetry(c Client, p RetryPolicy) Client {
	return &retrying{next: c, policy: p.withDefaults()}
}

type retrying struct {
	next   Client
	policy RetryPolicy
}

func (r *retrying) Complete(ctx context.Context, req Request) (Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Complete(ctx, req)
		if err == nil {
			return resp, nil
		}
		var e *Error
		if !errors.As(err, &e) || !e.Retryable() {
			if attempt == 1 {
				return Response{}, err
			}
			return Response{}, &RetryError{Attempts: attempt, Err: err}
		}
		if attempt >= r.policy.MaxAttempts {
			return Response{}, &RetryError{Attempts: attempt, Err: err}
		}
		wait := r.policy.wait(attempt, e)
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, err, wait)
		}
		if err := r.policy.Sleep(ctx, wait); err != nil {
			return Response{}, &RetryError{Attempts: attempt, Err: err}
		}
		if err := ctx.Err(); err != nil {
			return Response{}, &RetryError{Attempts: attempt, Err: err}
		}
	}
}
