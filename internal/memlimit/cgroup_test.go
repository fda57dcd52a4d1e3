package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFromCgroup: the limit is read from the cgroup the process is in, on cgroup v2, on v1's
// memory hierarchy (which wins on a hybrid machine, where v2 holds no controller) and in
// none; a cgroup without a limit, and a machine without cgroups, give none.
func TestFromCgroup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		proc       string
		files      map[string]string
		wantCgroup int64
	}{
		{"v2", "0::/agentd.slice/agentd.service\n", map[string]string{"agentd.slice/agentd.service/memory.max": "1073741824\n"}, 1 << 30},
		{"v2 without a limit", "0::/x\n", map[string]string{"x/memory.max": "max\n"}, 0},
		{"v1", "12:pids:/a\n4:memory:/docker/abc\n1:name=systemd:/a\n", map[string]string{"memory/docker/abc/memory.limit_in_bytes": "536870912\n"}, 512 << 20},
		{"v1 without a limit", "4:memory:/\n", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"hybrid: v1's memory first", "4:cpu,memory:/k\n0::/k\n", map[string]string{"memory/k/memory.limit_in_bytes": "268435456\n"}, 256 << 20},
		{"no controller files", "0::/gone\n", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			proc := filepath.Join(dir, "cgroup")
			if err := os.WriteFile(proc, []byte(tc.proc), 0o600); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, "fs")
			for name, v := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			limit, cgroup, err := fromCgroup(proc, root)
			if err != nil {
				t.Fatal(err)
			}
			if cgroup != tc.wantCgroup || limit != tc.wantCgroup/100*AutoShare {
				t.Fatalf("limit %d of a cgroup's %d, want %d of %d", limit, cgroup, tc.wantCgroup/100*AutoShare, tc.wantCgroup)
			}
		})
	}
	if _, _, err := fromCgroup(filepath.Join(t.TempDir(), "none"), t.TempDir()); err != nil {
		t.Fatalf("no /proc: %v", err)
	}
	if _, _, err := FromCgroup(); err != nil {
		t.Fatalf("this machine's cgroup: %v", err)
	}
}
