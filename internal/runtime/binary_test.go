package runtime

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pack makes an "executable" of exe's bytes with payload packed into it by the real
// scripts/pack-runtime.sh, and returns its path.
func pack(t *testing.T, exe, payload []byte) string {
	t.Helper()
	dir := t.TempDir()
	out, rt := filepath.Join(dir, "agentd"), filepath.Join(dir, "runtime")
	if err := os.WriteFile(out, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rt, payload, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("sh", "../../scripts/pack-runtime.sh", out, rt).CombinedOutput(); err != nil {
		t.Fatalf("pack-runtime.sh: %v\n%s", err, b)
	}
	return out
}

func TestInstallBinary(t *testing.T) {
	bin := t.TempDir()
	first := pack(t, []byte("\x7fELF the agentd executable"), []byte("runtime build one"))
	path, err := InstallBinary(first, bin)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "runtime build one" {
		t.Fatalf("installed %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o555 || !strings.HasPrefix(filepath.Base(path), BinaryPrefix) {
		t.Fatalf("installed %s: %v, %v", path, fi.Mode(), err)
	}

	// Installing again keeps the file (sandboxes may be running it).
	again, err := InstallBinary(first, bin)
	if err != nil || again != path {
		t.Fatalf("second install: %s, %v", again, err)
	}
	if fi2, err := os.Stat(again); err != nil || !os.SameFile(fi, fi2) {
		t.Fatalf("second install replaced the file: %v", err)
	}

	// A damaged file of the right name is replaced.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("runtime build 0ne"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallBinary(first, bin); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "runtime build one" {
		t.Fatalf("damaged file not replaced: %q", got)
	}

	// Another version installs beside it; removing the others leaves it alone.
	second := pack(t, []byte("\x7fELF a newer agentd"), []byte("runtime build two"))
	newer, err := InstallBinary(second, bin)
	if err != nil || newer == path {
		t.Fatalf("install of another version: %s, %v", newer, err)
	}
	if entries, _ := os.ReadDir(bin); len(entries) != 2 {
		t.Fatalf("after installing another version, the directory holds %v", entries)
	}
	if err := os.WriteFile(filepath.Join(bin, "unrelated"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	RemoveOtherBinaries(bin, newer)
	var names []string
	entries, _ := os.ReadDir(bin)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{filepath.Base(newer), "unrelated"}; !slices.Equal(names, want) {
		t.Fatalf("after removing the other builds, the directory holds %v, want %v", names, want)
	}
}

func TestInstallBinaryRefusals(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(plain, bytes.Repeat([]byte("x"), 500), 0o755); err != nil {
		t.Fatal(err)
	}
	tiny := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(tiny, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}

	damaged := pack(t, []byte("exe"), []byte("the runtime build"))
	data, _ := os.ReadFile(damaged)
	i := bytes.Index(data, []byte("the runtime build"))
	data[i] = 'T'
	if err := os.WriteFile(damaged, data, 0o755); err != nil {
		t.Fatal(err)
	}

	oversized := pack(t, []byte("exe"), []byte("rt"))
	data, _ = os.ReadFile(oversized)
	data = bytes.Replace(data, []byte("size=00000000000000000002"), []byte("size=00000000000000009999"), 1)
	if err := os.WriteFile(oversized, data, 0o755); err != nil {
		t.Fatal(err)
	}

	malformed := pack(t, []byte("exe"), []byte("rt"))
	data, _ = os.ReadFile(malformed)
	data = bytes.Replace(data, []byte("sha256="), []byte("sha512="), 1)
	if err := os.WriteFile(malformed, data, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, exe string
		noRuntime bool
		errHas    string
	}{
		{name: "nothing packed", exe: plain, noRuntime: true},
		{name: "shorter than a trailer", exe: tiny, noRuntime: true},
		{name: "missing executable", exe: filepath.Join(t.TempDir(), "nope"), errHas: "no such file"},
		{name: "damaged runtime", exe: damaged, errHas: "does not match its hash"},
		{name: "size beyond the file", exe: oversized, errHas: "cannot hold"},
		{name: "malformed trailer", exe: malformed, errHas: "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			path, err := InstallBinary(tt.exe, bin)
			if tt.noRuntime != errors.Is(err, ErrNoPackedRuntime) {
				t.Fatalf("err %v, want ErrNoPackedRuntime: %v", err, tt.noRuntime)
			}
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("err %v, want one saying %q", err, tt.errHas)
			}
			if path != "" {
				t.Fatalf("path %q with an error", path)
			}
			if entries, _ := os.ReadDir(bin); len(entries) != 0 {
				t.Fatalf("a refused install left %v", entries)
			}
		})
	}
}
