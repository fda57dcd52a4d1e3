package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxLimits: the default spec's limits and the ceiling have defaults an
// administrator can change, and a spec within the ceiling loads.
func TestSandboxLimits(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := LimitsConfig{MemoryMB: 2048, CPUs: 1, PIDs: 1024, TmpMB: 512}
	if c.SandboxLimits != want {
		t.Fatalf("default limits %+v, want %+v", c.SandboxLimits, want)
	}
	if m := c.SandboxMaxLimits; m.MemoryMB < want.MemoryMB || m.CPUs < want.CPUs || m.PIDs < want.PIDs || m.TmpMB < want.TmpMB {
		t.Fatalf("ceiling %+v is below the defaults %+v", m, want)
	}
	if c.SandboxUID <= 0 {
		t.Fatalf("sandbox uid %d", c.SandboxUID)
	}
	file := filepath.Join(t.TempDir(), "agentd.toml")
	if err := os.WriteFile(file, []byte("sandbox_memory_mb = 512\nsandbox_max_pids = 100\nsandbox_pids = 50\n"+
		"[[sandbox_specs]]\nid = \"big\"\n[sandbox_specs.limits]\nmemory_mb = 8192\npids = 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load([]string{"--config", file}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.SandboxLimits.MemoryMB != 512 || c.SandboxLimits.PIDs != 50 || c.SandboxMaxLimits.PIDs != 100 {
		t.Fatalf("configured limits %+v, ceiling %+v", c.SandboxLimits, c.SandboxMaxLimits)
	}
	got := c.Specs[0].Limits.WithDefaults(c.SandboxLimits)
	if got != (LimitsConfig{MemoryMB: 8192, CPUs: 1, PIDs: 100, TmpMB: 512}) {
		t.Fatalf("spec limits with defaults: %+v", got)
	}
}

// TestSandboxLimitErrors: a spec or a default above the ceiling, a negative limit and root
// as the sandbox uid stop the server at start-up, with the key and the ceiling named.
func TestSandboxLimitErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	above := write("above.toml", "[[sandbox_specs]]\nid = \"huge\"\n[sandbox_specs.limits]\nmemory_mb = 65536\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"spec above the ceiling", []string{"--config", above}, nil,
			"sandbox_specs[0] (huge): limits: memory_mb 65536 is above the ceiling of 8192 (sandbox_max_memory_mb)"},
		{"default above the ceiling", []string{"--sandbox-pids", "10000"}, nil,
			"the default sandbox limits (sandbox_memory_mb and the like): pids 10000 is above the ceiling of 4096 (sandbox_max_pids)"},
		{"negative", nil, map[string]string{"AGENTD_SANDBOX_CPUS": "-1"}, "cpus -1 must not be negative"},
		{"not a number", []string{"--sandbox-cpus", "lots"}, nil, "--sandbox-cpus"},
		{"root", []string{"--sandbox-uid", "0"}, nil, "sandbox uid 0"},
		{"bad network", []string{"--config", write("net.toml", "[[sandbox_specs]]\nid = \"x\"\nnetwork = \"bridge\"\n")}, nil,
			`network "bridge": want egress, none or host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}
