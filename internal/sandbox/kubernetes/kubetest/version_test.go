package kubetest

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The build script builds what kbuild/go.mod requires, and the cluster looks for Version's
// binaries: a bump of one without the other would leave the tests skipping for want of a
// build that never comes. The staging modules must come from the same release.
func TestVersionMatchesBuildModule(t *testing.T) {
	b, err := os.ReadFile("kbuild/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("kbuild/go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pinned string
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			pinned = r.Mod.Version
		}
	}
	if pinned != Version {
		t.Fatalf("kbuild/go.mod requires k8s.io/kubernetes %q, Version is %q: scripts/kube-build.sh -pin rewrites the module; make them agree", pinned, Version)
	}
	staging := "v0." + strings.TrimPrefix(Version, "v1.")
	if len(f.Replace) == 0 {
		t.Fatal("kbuild/go.mod replaces no staging module")
	}
	for _, r := range f.Replace {
		if r.New.Version != staging {
			t.Errorf("kbuild/go.mod replaces %s with %s, want %s", r.Old.Path, r.New, staging)
		}
	}
}
