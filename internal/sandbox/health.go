package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// waitHealthy polls the runtime of sb until it answers /api/identity, which proves that it
// serves, knows the key and is the right sandbox, or ctx ends. It returns the client that
// had the answer, whose connection the caller keeps (keepClient) once the sandbox is
// RUNNING: the first request after a start or a resume then needs no new connection (for a
// runtime reached over TLS, no second handshake).
func (s *Service) waitHealthy(ctx context.Context, sb Sandbox, key string) (*runtimeclient.Client, error) {
	c, err := s.newClient(sb.Instance, key)
	if err != nil {
		return nil, err
	}
	var lastInspect time.Time
	start := time.Now()
	for delay := pollFirst; ; delay = nextPoll(delay, time.Since(start)) {
		err := probe(ctx, c, sb.ID)
		if err == nil {
			return c, nil
		}
		if time.Since(lastInspect) >= inspectInterval {
			lastInspect = time.Now()
			if st, ierr := s.backend.Inspect(ctx, sb.Instance); ierr == nil && st == StateGone {
				c.CloseIdleConnections()
				return nil, fmt.Errorf("%w (last error: %v)", errRuntimeExited, err)
			}
		}
		select {
		case <-ctx.Done():
			c.CloseIdleConnections()
			return nil, fmt.Errorf("%w within %v (last error: %v)", context.Cause(ctx), s.startTimeout, err)
		case <-time.After(delay):
		}
	}
}

func probe(ctx context.Context, c *runtimeclient.Client, id string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// One round trip: an /alive before it would tell nothing more, and cost every start and
	// resume a second wakeup of the runtime.
	ident, err := c.Identity(ctx)
	if err != nil {
		return err
	}
	if ident.SandboxID != id {
		return fmt.Errorf("runtime serves sandbox %q, want %q", ident.SandboxID, id)
	}
	return nil
}

// nextPoll doubles the delay up to a cap that rises once the wait has lasted a while.
func nextPoll(delay, waited time.Duration) time.Duration {
	limit := pollFast
	if waited > pollFastFor {
		limit = pollSlow
	}
	return min(2*delay, limit)
}
