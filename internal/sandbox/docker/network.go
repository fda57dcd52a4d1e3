package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox/firewall"
)

// The egress network of this backend's sandboxes is a bridge of its own, made at the first
// egress start and labelled like its containers: sandboxes reach the internet through the
// engine's NAT (as on any bridge), and the firewall rules of package firewall keep the bridge
// off the host itself (its addresses, agentd's port among them), off link-local addresses,
// and its containers off each other (so does the bridge's own enable_icc=false where the
// engine manages iptables). It goes, with its rules, when Close finds no sandbox left.

// networkName is the name of the backend's egress network, and bridgeName its Linux bridge
// (at most 15 characters).
func (b *Backend) networkName() string { return "agentd-egress-" + b.instance }
func (b *Backend) bridgeName() string  { return "agd-" + b.instance[:11] }

// egressNetwork makes sure the egress network and its firewall rules exist, and returns the
// network's name. The firewall comes first: a sandbox on the bridge before its rules would
// reach the host.
func (b *Backend) egressNetwork(ctx context.Context) (string, error) {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if err := firewall.GuardBridge(b.bridgeName()); err != nil {
		return "", fmt.Errorf("egress network: the firewall rules that keep it off the host could not be added: %w", err)
	}
	name := b.networkName()
	if _, err := b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		return name, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("egress network: %w", err)
	}
	_, err := b.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: map[string]string{labelManaged: "true", labelInstance: b.instance},
		Options: map[string]string{
			"com.docker.network.bridge.name":                 b.bridgeName(),
			"com.docker.network.bridge.enable_icc":           "false",
			"com.docker.network.bridge.enable_ip_masquerade": "true",
		},
	})
	if err != nil && !cerrdefs.IsConflict(err) { // a concurrent start may have made it
		return "", fmt.Errorf("egress network: create: %w", err)
	}
	b.log.Info("egress network created", "network", name, "bridge", b.bridgeName())
	return name, nil
}

// pruneNetwork removes the egress network and its firewall rules when no container of this
// backend is left.
func (b *Backend) pruneNetwork(ctx context.Context) error {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if _, err := b.cli.NetworkInspect(ctx, b.networkName(), client.NetworkInspectOptions{}); cerrdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	ids, err := b.containers(ctx, "")
	if err != nil || len(ids) > 0 {
		return err
	}
	if _, err := b.cli.NetworkRemove(ctx, b.networkName(), client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove the egress network: %w", err)
	}
	return firewall.Unguard(b.bridgeName())
}
