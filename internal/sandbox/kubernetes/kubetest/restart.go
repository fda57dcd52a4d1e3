package kubetest

import (
	"context"
	"fmt"
	"slices"
)

// RestartAPIServer kills the API server (SIGKILL: its clients' connections break without a
// goodbye, as in a crash) and starts it again on the same etcd, and returns once it answers
// /readyz. Meanwhile every call and watch of every client fails: the outage that clients
// must ride out. Not safe to call concurrently with Close.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return fmt.Errorf("restart the API server: the cluster has none")
	}
	old := c.procs[i]
	if err := old.stop(stopTimeout); err != nil {
		return fmt.Errorf("restart the API server: %w", err)
	}
	p, err := startProcess(old.name, old.netns, old.logPath, old.args)
	if err != nil {
		return fmt.Errorf("restart the API server: %w", err)
	}
	c.procs[i] = p
	return c.poll(ctx, "the restarted API server's /readyz", func(ctx context.Context) error {
		_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}
