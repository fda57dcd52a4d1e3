// Package kubetest runs a real single-node Kubernetes cluster for tests: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and a kubelet over Debian's containerd, runc and
// CNI bridge plugin, all inside a network namespace of their own, with images imported from
// tarballs instead of pulled from a registry.
//
// The Kubernetes binaries are built from the Go module proxy by scripts/kube-build.sh, at the
// release the nested module in kbuild/ pins (Version), into a cache directory shared by every
// checkout on the machine (DefaultBinDir). Start skips the test when the binaries or the
// Debian packages are missing, or when it does not run as root; under CI it fails instead.
// Start gives a test a cluster of its own (about 10 s to start on 2 idle cores); tests that
// share one call Up in TestMain and Close it there.
//
// The test process reaches the API server, the node and the pods through Cluster.Config and
// Cluster.DialContext, which make their sockets inside the cluster's network namespace;
// client-go's exec and port forwarding take Cluster.StreamTransport for that.
//
// One cluster runs at a time on a machine: the kubelet changes kernel settings that are not
// per namespace (vm.overcommit_memory, kernel.panic, …), which Close restores, and two
// clusters would restore each other's. Up waits for the previous cluster to be closed, and
// removes what a cluster whose process was killed left behind (processes, mounts, network
// namespaces, cgroups, kernel settings, files) before it starts.
//
// Pods meant to run on the cluster use imagePullPolicy: Never (nothing can be pulled) and
// terminationGracePeriodSeconds: 0 when their first process ignores SIGTERM, as a shell does,
// or each deletion waits out the 30 s grace period.
package kubetest
