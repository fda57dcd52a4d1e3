package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// loadCase loads a configuration from args and getenv for a table case. With wantErr, the
// load must fail with an error that says it, and ok is false: the case is done. Otherwise
// the load must succeed.
func loadCase(t *testing.T, args []string, getenv func(string) string, wantErr string) (c Config, ok bool) {
	t.Helper()
	c, err := Load(args, getenv)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one saying %q", err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

func TestDefaults(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:3000" || c.SandboxBackend != "auto" || c.DefaultSpec != "default" ||
		c.SandboxStartTimeout != 30*time.Second || c.SandboxOrphanGrace != 2*time.Minute || c.PublicURL != "http://127.0.0.1:3000" ||
		c.TerminalNoChangeTimeout != 30*time.Second || c.TerminalMaxWait != 2*time.Minute ||
		c.MCPConnectTimeout != 30*time.Second || c.MCPCallTimeout != time.Minute ||
		c.StreamMaxSubscribers != 100 || c.StreamBuffer != 256 || c.StreamHeartbeat != 15*time.Second {
		t.Fatalf("defaults = %+v", c)
	}
	if !filepath.IsAbs(c.DataDir) || filepath.Base(c.DataDir) != ".agentd" {
		t.Fatalf("data dir = %q", c.DataDir)
	}
}

func TestPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agentd.toml")
	os.WriteFile(file, []byte(`addr = "127.0.0.1:4000"
log_level = "warn"
max_running_sandboxes = 3

[[sandbox_specs]]
id = "py"
command = ["agentd", "runtime"]
network = "none"
[sandbox_specs.limits]
memory_mb = 512
`), 0o600)
	c, err := Load([]string{"--config", file, "--log-level", "debug"},
		env(map[string]string{"AGENTD_ADDR": "127.0.0.1:5000", "AGENTD_LOG_LEVEL": "error"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:5000" {
		t.Errorf("env should beat file: addr = %q", c.Addr)
	}
	if c.LogLevel != "debug" {
		t.Errorf("flag should beat env: log level = %q", c.LogLevel)
	}
	if c.MaxRunningSandboxes != 3 {
		t.Errorf("file should beat default: max running = %d", c.MaxRunningSandboxes)
	}
	if len(c.Specs) != 1 || c.Specs[0].ID != "py" || c.Specs[0].Limits.MemoryMB != 512 || c.Specs[0].Network != "none" {
		t.Errorf("specs = %+v", c.Specs)
	}
}

func TestAdminKeyAliases(t *testing.T) {
	c, err := Load(nil, env(map[string]string{"SESSION_API_KEY": "from-openhands"}))
	if err != nil || c.AdminKey != "from-openhands" {
		t.Fatalf("SESSION_API_KEY alias: %q, %v", c.AdminKey, err)
	}
	c, err = Load(nil, env(map[string]string{"SESSION_API_KEY": "alias", "AGENTD_ADMIN_KEY": "canonical"}))
	if err != nil || c.AdminKey != "canonical" {
		t.Fatalf("canonical name should win: %q, %v", c.AdminKey, err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("no_such_key = 1\n"), 0o600)
	badSpec := filepath.Join(dir, "badspec.toml")
	os.WriteFile(badSpec, []byte("[[sandbox_specs]]\nid = \"x\"\nimagee = \"typo\"\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad backend", []string{"--sandbox-backend", "vm"}, nil, "sandbox backend"},
		{"bad addr", nil, map[string]string{"AGENTD_ADDR": "nope"}, "addr"},
		{"bad int", nil, map[string]string{"AGENTD_MAX_RUNNING_SANDBOXES": "many"}, "AGENTD_MAX_RUNNING_SANDBOXES"},
		{"bad duration", []string{"--sandbox-start-timeout", "soon"}, nil, "--sandbox-start-timeout"},
		{"zero terminal wait", nil, map[string]string{"AGENTD_TERMINAL_MAX_WAIT": "0s"}, "terminal max wait must be positive"},
		{"negative no-change timeout", []string{"--terminal-no-change-timeout", "-1s"}, nil, "terminal no-change timeout must be positive"},
		{"zero mcp connect timeout", []string{"--mcp-connect-timeout", "0s"}, nil, "mcp connect timeout must be positive"},
		{"mcp call timeout over an hour", nil, map[string]string{"AGENTD_MCP_CALL_TIMEOUT": "61m"}, "mcp call timeout must be positive and at most 1h"},
		{"no streams", []string{"--stream-max-subscribers", "0"}, nil, "stream max subscribers must be at least 1"},
		{"no stream buffer", nil, map[string]string{"AGENTD_STREAM_BUFFER": "0"}, "stream buffer must be at least 1"},
		{"heartbeat too often", []string{"--stream-heartbeat", "10ms"}, nil, "stream heartbeat must be at least 1s"},
		{"unknown file key", []string{"--config", bad}, nil, "no_such_key"},
		{"unknown spec key", []string{"--config", badSpec}, nil, "imagee"},
		{"missing file", []string{"--config", filepath.Join(dir, "none.toml")}, nil, "read config file"},
		{"unknown flag", []string{"--nope"}, nil, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.args, env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestSandboxPools(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want map[string]int
	}{
		{"2", map[string]int{"": 2}},
		{"0", map[string]int{}},
		{"", map[string]int{}},
		{"1, python=3", map[string]int{"": 1, "python": 3}},
		{"python=0", map[string]int{}},
	} {
		var got map[string]int
		if err := setPools(&got, tc.v); err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("setPools(%q) = %v, %v; want %v", tc.v, got, err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "x", "=2", "2,3", "a=1,a=2", "101"} {
		var got map[string]int
		if err := setPools(&got, bad); err == nil {
			t.Errorf("setPools(%q) took it: %v", bad, got)
		}
	}
	cfg, err := Load(nil, func(string) string { return "" })
	if err != nil || !maps.Equal(cfg.SandboxPools, map[string]int{"": 2}) {
		t.Fatalf("default pools %v, %v", cfg.SandboxPools, err)
	}
}
