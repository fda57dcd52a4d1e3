package config

import "testing"

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
