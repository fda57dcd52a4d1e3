// Package kubernetes is the sandbox backend on a Kubernetes cluster, through client-go: each
// sandbox is a pod of the spec's image in a configured namespace, with a Secret, a volume
// claim for its workspace and a NetworkPolicy, all labelled with the sandbox's id, its
// owner and agentd's installation, so that one labelled list finds this installation's
// sandboxes and no other's.
//
// The runtime gets into any image from agentd's own (Options.RuntimeImage): the pod's init
// container runs agentd from it (`agentd sandbox-init`, package podinit), which copies itself
// into a volume the sandbox's container shares, gives the workspace to the sandbox uid, and
// writes the pod's outbound rules with nftables into the pod's network namespace before any
// command of the sandbox runs: egress reaches the internet but not the cluster's ranges, the
// node, the API server or metadata addresses (Options.Deny); none reaches nothing. The rules
// hold on any network plugin; the NetworkPolicy says the same to plugins that enforce
// policies. The init container has CAP_NET_ADMIN and CAP_CHOWN and nothing else; the
// sandbox's container never has CAP_NET_ADMIN.
//
// The sandbox's container runs the runtime as root, as the docker backend's does, with no
// capability but CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP and no privilege
// escalation; the runtime starts every command as the unprivileged sandbox uid
// (Options.UID). Its session key and its TLS key come from the Secret's volume, mounted
// read-only with files that only root may read, so the commands cannot. The pod mounts no
// service account token and gets no service variables.
//
// The control plane reaches the runtime over TLS with a certificate made for that sandbox
// at its start, whose key's digest the Instance carries and every client pins (tls.go): at
// the pod's IP (ReachIP, when agentd runs in the cluster) or through the API server's port
// forwarding (ReachPortForward, when pod IPs are not routable from agentd). The backend
// supplies that transport (sandbox.Transporter).
//
// A pod cannot be frozen: Pause removes it, keeping the Secret and the workspace's volume
// claim; Resume creates the pod again from the manifest kept in the Secret, on the same
// workspace. What ran in the sandbox (processes, terminal sessions) does not survive a pause,
// its files do. The workspace is therefore always a volume claim (of Options.StorageClass,
// the spec's disk or Options.WorkspaceSize in size), never an emptyDir, which a pause would
// lose.
//
// The backend reads its sandboxes' state from a view of the namespace's labelled pods and
// Secrets that client-go's informers keep (informer.go): Inspect, List, the pod a connection
// goes to and the waits for a pod to run or to go make no call to the API server, and the
// informers tell the sandbox service of a pod removed or ended as it happens
// (sandbox.Watcher). A pod's absence means a pause or a loss by what the Secret says
// (annotationPod).
//
// Warm pools are kept in the cluster, shared by every replica (sandbox.SharedPools, pool.go):
// a pooled sandbox's Secret holds its pool's secret where a session key goes and says in a
// label that it is in a pool; a claim is one patch of that Secret guarded by the
// resourceVersion it was listed at, which the API server applies for one claimer only.
//
// Every call to the API server is retried with backoff while it fails for a passing reason
// (retry.go), and the informers take their watches up again after every error; the backend
// never panics on the API server's answers.
package kubernetes
