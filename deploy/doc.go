// Package deploy holds agentd's Kubernetes manifests, a kustomization (docs/kubernetes.md),
// and their tests: the manifests built as kubectl apply -k builds them, each object decoded
// strictly and checked against what agentd needs (its settings, the backend's permissions,
// the probes), and, on the test cluster of internal/sandbox/kubernetes/kubetest, applied with
// agentd's own image to run conversations through its replicas. It has no code of its own.
package deploy
