package kubernetes

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// apiBackoff spaces the retries of a call the API server failed for a passing reason: about
// 12 s in all, within which a restarting API server or a brief overload is usually over.
var apiBackoff = wait.Backoff{Steps: 7, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 5 * time.Second}

// passing reports an error worth retrying: the API server overloaded, timed out, restarting
// or unreachable for a moment. A refusal (forbidden, invalid, not found, conflict) is not.
func passing(err error) bool {
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// call runs fn, again with backoff while it fails for a passing reason and ctx lasts. Every
// call the backend makes is one that may safely run twice: reads, deletes (a second one finds
// nothing, which the callers take as done), and creates of objects with fixed names (a second
// one finds the first: callers take AlreadyExists as done).
func call(ctx context.Context, fn func(context.Context) error) error {
	var last error
	err := retry.OnError(apiBackoff, func(err error) bool { return passing(err) && ctx.Err() == nil }, func() error {
		last = fn(ctx)
		return last
	})
	if err == nil {
		return nil
	}
	if last != nil {
		return last
	}
	return err
}
