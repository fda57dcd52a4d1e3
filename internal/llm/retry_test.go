package llm

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// scripted is a Client that returns its errors in turn, then succeeds.
type scripted struct {
	errs  []error
	calls int
}

func (s *scripted) Complete(ctx context.Context, req Request) (Response, error) {
	s.calls++
	if s.calls <= len(s.errs) {
		return Response{}, s.errs[s.calls-1]
	}
	return Response{ResponseID: "ok"}, nil
}

func exact(d time.Duration) time.Duration { return d }

func recorder(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}
}

var (
	errServer  = &Error{Kind: KindServer, Status: 500, Msg: "boom"}
	errAuth    = &Error{Kind: KindAuth, Status: 401, Msg: "bad key"}
	errLimited = &Error{Kind: KindRateLimit, Status: 429, RetryAfter: 3 * time.Second}
)

func TestWithRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   RetryPolicy
		errs     []error
		calls    int
		waits    []time.Duration
		attempts int   // of the *RetryError; 0 for none
		last     error // the error returned or wrapped; nil for success
	}{
		{
			name:  "success at once",
			calls: 1,
		},
		{
			name:  "exponential backoff, then success",
			errs:  []error{errServer, errServer, errServer},
			calls: 4,
			waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:     "attempts run out",
			errs:     []error{errServer, errServer, errServer, errServer, errServer, errServer},
			calls:    5,
			waits:    []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			attempts: 5,
			last:     errServer,
		},
		{
			name:     "backoff capped by MaxDelay",
			policy:   RetryPolicy{MaxAttempts: 4, BaseDelay: 10 * time.Second, MaxDelay: 25 * time.Second},
			errs:     []error{errServer, errServer, errServer, errServer},
			calls:    4,
			waits:    []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second},
			attempts: 4,
			last:     errServer,
		},
		{
			name:  "Retry-After honoured",
			errs:  []error{errLimited},
			calls: 2,
			waits: []time.Duration{3 * time.Second},
		},
		{
			name:   "Retry-After capped by MaxDelay",
			policy: RetryPolicy{MaxDelay: 2 * time.Second},
			errs:   []error{errLimited},
			calls:  2,
			waits:  []time.Duration{2 * time.Second},
		},
		{
			name:  "not retryable at once",
			errs:  []error{errAuth},
			calls: 1,
			last:  errAuth,
		},
		{
			name:     "not retryable after a retry",
			errs:     []error{errServer, errAuth},
			calls:    2,
			waits:    []time.Duration{time.Second},
			attempts: 2,
			last:     errAuth,
		},
		{
			name:     "one attempt only",
			policy:   RetryPolicy{MaxAttempts: 1},
			errs:     []error{errServer},
			calls:    1,
			attempts: 1,
			last:     errServer,
		},
		{
			name:  "foreign errors are not retried",
			errs:  []error{context.Canceled},
			calls: 1,
			last:  context.Canceled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			p := tc.policy
			p.Jitter, p.Sleep = exact, recorder(&waits)
			next := &scripted{errs: tc.errs}
			resp, err := WithRetry(next, p).Complete(context.Background(), Request{})
			if next.calls != tc.calls || !reflect.DeepEqual(waits, tc.waits) {
				t.Errorf("%d calls, waits %v; want %d, %v", next.calls, waits, tc.calls, tc.waits)
			}
			if tc.last == nil {
				if err != nil || resp.ResponseID != "ok" {
					t.Errorf("Complete = %+v, %v; want success", resp, err)
				}
				return
			}
			var re *RetryError
			switch {
			case tc.attempts == 0 && err != tc.last:
				t.Errorf("error %v, want %v unchanged", err, tc.last)
			case tc.attempts > 0 && (!errors.As(err, &re) || re.Attempts != tc.attempts || re.Err != tc.last):
				t.Errorf("error %v, want a *RetryError of %d attempts ending in %v", err, tc.attempts, tc.last)
			}
		})
	}
}

func TestRetryErrorText(t *testing.T) {
	err := &RetryError{Attempts: 5, Err: errServer}
	if got, want := err.Error(), "llm: gave up after 5 attempts: llm: server error (HTTP 500): boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err = &RetryError{Attempts: 2, Err: context.Canceled}
	if got := err.Error(); !strings.HasPrefix(got, "llm: stopped after 2 attempts") {
		t.Errorf("Error() = %q, want it to say the call was stopped", got)
	}
}

func TestFullJitter(t *testing.T) {
	p := RetryPolicy{}.withDefaults()
	for n := 1; n <= 8; n++ {
		ceiling := min(DefaultBaseDelay<<(n-1), DefaultMaxDelay)
		for range 50 {
			if d := p.wait(n, errServer); d < 0 || d > ceiling {
				t.Fatalf("wait before retry %d = %v, want within [0, %v]", n, d, ceiling)
			}
		}
	}
	if d := p.wait(1000, errServer); d < 0 || d > DefaultMaxDelay {
		t.Errorf("wait before retry 1000 = %v, want within [0, %v]", d, DefaultMaxDelay)
	}
}

func TestRetryStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var retries []int
	p := RetryPolicy{
		BaseDelay: time.Hour,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			retries = append(retries, attempt)
			cancel()
		},
	}
	next := &scripted{errs: []error{errServer, errServer}}
	// The real timer: the cancel must end its hour-long wait. A wait that ignored the
	// cancel would outlast the bound below by far.
	done := make(chan error, 1)
	go func() {
		_, err := WithRetry(next, p).Complete(ctx, Request{})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the retry wait did not end within 30s of the cancel")
	}
	var re *RetryError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || re.Attempts != 1 {
		t.Errorf("error %v, want a *RetryError of 1 attempt wrapping context.Canceled", err)
	}
	if next.calls != 1 || !reflect.DeepEqual(retries, []int{1}) {
		t.Errorf("%d calls, retries %v; want a stop after 1 call", next.calls, retries)
	}
}
