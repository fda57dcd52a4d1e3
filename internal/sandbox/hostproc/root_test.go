package hostproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	r, err := NewRoot("/data/sb", "runtime.sock")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := r.Dir("abc")
	if err != nil || dir != "/data/sb/abc" {
		t.Fatalf("Dir = %q, %v", dir, err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a\x00b", strings.Repeat("x", 120)} {
		if _, err := r.Dir(bad); err == nil {
			t.Errorf("Dir(%q) accepted", bad)
		}
	}
	long := "/" + strings.Repeat("d", 70)
	if _, err := NewRoot(long, filepath.Join("run", "runtime.sock")); err == nil || !strings.Contains(err.Error(), "choose a shorter data directory") {
		t.Fatalf("NewRoot of a long path: %v", err)
	}
}

func TestRootCreate(t *testing.T) {
	r, err := NewRoot(t.TempDir(), "runtime.sock")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := r.Create("abc")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created %s: %v, %v", dir, fi.Mode(), err)
	}
	if _, err := r.Create("abc"); err == nil {
		t.Fatal("Create took over an existing directory")
	}
	if _, err := r.Create("../x"); err == nil {
		t.Fatal("Create accepted an id that is no path element")
	}
}
