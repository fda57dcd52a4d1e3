package kubetest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// startTimeout bounds Start: a cluster is up in about 15 s on an idle 2-core machine, but
// other tests may load it many times over, and another test process's cluster may have to
// be closed first.
const startTimeout = 10 * time.Minute

// Start is Up for a test: it skips the test when this machine cannot run a cluster (fails
// it instead when the environment variable CI is set: a CI machine must have everything),
// fails it when the cluster does not start, and closes the cluster when the test ends. A
// failed test's cleanup first logs the end of each component's log.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Up(ctx, Options{})
	if errors.Is(err, ErrUnavailable) {
		if os.Getenv("CI") != "" {
			tb.Fatalf("%v (CI is set, so this fails instead of skipping)", err)
		}
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("Kubernetes %s cluster up in network namespace %s: %s", Version, c.Netns, strings.Join(c.Milestones, ", "))
	tb.Cleanup(func() {
		if c.closed {
			return // by the test
		}
		if tb.Failed() {
			tb.Logf("component logs of the cluster:%s", c.logTails(2000))
		}
		start := time.Now()
		if err := c.Close(); err != nil {
			tb.Errorf("close the cluster: %v", err)
		}
		tb.Logf("cluster closed in %.1fs", time.Since(start).Seconds())
	})
	return c
}
