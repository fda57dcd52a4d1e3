package app

import (
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
)

// TestSpecs: the default spec gets egress and the server's default limits; a configured spec
// keeps what it sets and takes the defaults for the rest, and host only when it asks.
func TestSpecs(t *testing.T) {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Specs = []config.SpecConfig{
		{ID: "offline", Network: "none", Limits: config.LimitsConfig{MemoryMB: 512}},
		{ID: "open", Network: "host"},
		{ID: "plain"},
	}
	byID := map[string]sandbox.Spec{}
	for _, s := range Specs(cfg) {
		byID[s.ID] = s
	}
	def := sandbox.Limits{MemoryBytes: 2048 << 20, CPUs: 1, PIDs: 1024, TmpBytes: 512 << 20}
	tests := []struct {
		id      string
		network string
		limits  sandbox.Limits
	}{
		{"default", sandbox.NetworkEgress, def},
		{"offline", sandbox.NetworkNone, sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1, PIDs: 1024, TmpBytes: 512 << 20}},
		{"open", sandbox.NetworkHost, def},
		{"plain", sandbox.NetworkEgress, def},
	}
	for _, tt := range tests {
		got := byID[tt.id]
		if got.Network != tt.network || got.Limits != tt.limits {
			t.Errorf("spec %s: network %q, limits %+v; want %q, %+v", tt.id, got.Network, got.Limits, tt.network, tt.limits)
		}
	}
}
