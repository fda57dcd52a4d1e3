// Package kubetest is for tests that need a real Kubernetes cluster: it names the release
// such a cluster runs (Version), whose binaries scripts/kube-build.sh builds into
// DefaultBinDir, and writes images without a registry (WriteImage).
package kubetest
