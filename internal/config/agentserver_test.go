package config

import (
	"strings"
	"testing"
)

func TestAgentServerAddr(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		addr, url, err string
	}{
		{name: "default", addr: "127.0.0.1:3001", url: "http://127.0.0.1:3001"},
		{name: "next to addr", args: []string{"--addr", "0.0.0.0:8000"}, addr: "0.0.0.0:8001", url: "http://127.0.0.1:8001"},
		{name: "a port the system picks", args: []string{"--addr", "127.0.0.1:0"}, addr: "127.0.0.1:0", url: "http://127.0.0.1:0"},
		{name: "given", args: []string{"--agent-server-addr", "[::1]:9000", "--agent-server-public-url", "https://agents.example.com/"},
			addr: "[::1]:9000", url: "https://agents.example.com"},
		{name: "off", args: []string{"--agent-server-addr", "off", "--agent-server-public-url", "https://agents.example.com"}},
		{name: "no port left", args: []string{"--addr", "127.0.0.1:65535"}, err: "leaves no next port"},
		{name: "malformed", args: []string{"--agent-server-addr", "nine"}, err: "want host:port, auto or off"},
		{name: "the main address", args: []string{"--agent-server-addr", "127.0.0.1:3000"}, err: "the main server listens there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadCase(t, tc.args, env(nil), tc.err)
			if !ok {
				return
			}
			if c.AgentServerAddr != tc.addr || c.AgentServerPublicURL != tc.url {
				t.Fatalf("agent server %q at %q, want %q at %q", c.AgentServerAddr, c.AgentServerPublicURL, tc.addr, tc.url)
			}
		})
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		args                           []string
		addr, url, agentAddr, agentURL string
	}{
		{name: "ports the system picks", args: []string{"--addr", "127.0.0.1:0"},
			addr: "127.0.0.1:41000", url: "http://127.0.0.1:41000", agentAddr: "127.0.0.1:41001", agentURL: "http://127.0.0.1:41001"},
		{name: "every host", args: []string{"--addr", "0.0.0.0:0", "--agent-server-addr", "[::]:0"},
			addr: "0.0.0.0:41000", url: "http://127.0.0.1:41000", agentAddr: "[::]:41001", agentURL: "http://127.0.0.1:41001"},
		{name: "public URLs given", args: []string{"--addr", "127.0.0.1:0", "--public-url", "https://agentd.example.com", "--agent-server-public-url", "https://agents.example.com"},
			addr: "127.0.0.1:41000", url: "https://agentd.example.com", agentAddr: "127.0.0.1:41001", agentURL: "https://agents.example.com"},
		{name: "ports given", args: []string{"--addr", "127.0.0.1:3000"},
			addr: "127.0.0.1:3000", url: "http://127.0.0.1:3000", agentAddr: "127.0.0.1:3001", agentURL: "http://127.0.0.1:3001"},
		{name: "no agent-server base", args: []string{"--addr", "127.0.0.1:0", "--agent-server-addr", "off"},
			addr: "127.0.0.1:41000", url: "http://127.0.0.1:41000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadCase(t, tc.args, env(nil), "")
			if !ok {
				return
			}
			// What the listeners bound: the configured address where its port was given.
			addr, agentAddr := c.Addr, c.AgentServerAddr
			if strings.HasSuffix(addr, ":0") {
				addr = strings.TrimSuffix(addr, "0") + "41000"
			}
			if strings.HasSuffix(agentAddr, ":0") {
				agentAddr = strings.TrimSuffix(agentAddr, "0") + "41001"
			}
			b := c.Bound(addr, agentAddr)
			if b.Addr != tc.addr || b.PublicURL != tc.url || b.AgentServerAddr != tc.agentAddr || b.AgentServerPublicURL != tc.agentURL {
				t.Fatalf("bound: %q at %q, agent server %q at %q; want %q at %q, %q at %q",
					b.Addr, b.PublicURL, b.AgentServerAddr, b.AgentServerPublicURL, tc.addr, tc.url, tc.agentAddr, tc.agentURL)
			}
		})
	}
}
