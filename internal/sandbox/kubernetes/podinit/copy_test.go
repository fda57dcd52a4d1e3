package podinit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// packed is an "executable" of exe's bytes with runtime packed after it, as
// scripts/pack-runtime.sh packs the runtime-only build; sum replaces the runtime's hash in
// the trailer when it is not empty.
func packed(exe, runtime []byte, sum string) []byte {
	if sum == "" {
		h := sha256.Sum256(runtime)
		sum = hex.EncodeToString(h[:])
	}
	out := append(append([]byte{}, exe...), runtime...)
	return append(out, fmt.Sprintf("\nagentd-runtime sha256=%s size=%020d\n", sum, len(runtime))...)
}

// TestCopyRuntime: the runtime-only build the executable carries is what is copied, checked
// against its hash; an executable that carries none is copied whole; the copy is executable
// and nothing is left beside it when the copy fails.
func TestCopyRuntime(t *testing.T) {
	exe := []byte("\x7fELF the whole agentd")
	runtime := []byte("\x7fELF the runtime-only build")
	for _, tt := range []struct {
		name   string
		file   []byte
		want   []byte
		errHas string
	}{
		{name: "packed", file: packed(exe, runtime, ""), want: runtime},
		{name: "not packed", file: exe, want: exe},
		{name: "damaged", file: packed(exe, runtime, strings.Repeat("0", 64)), errHas: "does not match its hash"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "agentd")
			if err := os.WriteFile(src, tt.file, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "bin")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(out, "agentd")
			err := copyRuntime(src, dst)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err %v, want one saying %q", err, tt.errHas)
				}
				if entries, _ := os.ReadDir(out); len(entries) != 0 {
					t.Fatalf("left %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("copied %q, want %q", got, tt.want)
			}
			if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o755 {
				t.Fatalf("mode %v", fi.Mode())
			}
		})
	}
}
