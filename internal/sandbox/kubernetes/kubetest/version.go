package kubetest

import (
	"os"
	"path/filepath"
)

// Version is the Kubernetes release the cluster runs: the version of k8s.io/kubernetes that
// kbuild/go.mod requires, which scripts/kube-build.sh builds. A test checks that they agree.
const Version = "v1.35.4"

// DefaultBinDir is where scripts/kube-build.sh puts the binaries of Version:
// $XDG_CACHE_HOME/agentd-kube/<Version>/bin, or ~/.cache/agentd-kube/… without it.
func DefaultBinDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "agentd-kube", Version, "bin"), nil
}
