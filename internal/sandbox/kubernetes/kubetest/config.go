package kubetest

import (
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Addresses inside the cluster's network namespace. Nothing outside it routes to them.
const (
	// NodeIP is the node's address, on the namespace's loopback device (a /32: the machine
	// may lack the dummy device). The API server listens on it, port APIServerPort.
	NodeIP = "10.201.0.1"
	// PodCIDR is the pods' bridge network; pods get addresses from it.
	PodCIDR = "10.88.0.0/24"
	// ServiceCIDR is the range of service addresses. No kube-proxy runs: nothing routes them.
	ServiceCIDR = "10.96.0.0/24"
	// APIServerPort is the API server's port on every address of the namespace.
	APIServerPort = 6443
	// NodeName is the name of the one node.
	NodeName = "kubetest"
	// StorageClass is the cluster's default storage class: the controller manager's
	// hostPath provisioner, which makes a directory of hostPathPVDir for each claim and
	// removes it with the claim's volume.
	StorageClass = "kubetest-hostpath"
)

// hostPathPVDir is where the controller manager's hostPath provisioner makes volumes: a
// fixed path of the machine, which Close removes (one cluster runs at a time).
const hostPathPVDir = "/tmp/hostpath_pv"

// kubernetesServiceIP is the first address of ServiceCIDR, which the API server gives to the
// kubernetes service and so must be in its certificate.
const kubernetesServiceIP = "10.96.0.1"

// layout names the files and directories of one cluster under its directory.
type layout struct{ dir string }

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}
func (l layout) pki(name string) string   { return l.path("pki", name) }
func (l layout) log(name string) string   { return l.path("logs", name+".log") }
func (l layout) containerdSocket() string { return l.path("containerd.sock") }
func (l layout) kubeconfig(name string) string {
	return l.path(name + ".kubeconfig")
}

// writePKI writes the certificates, keys and kubeconfigs of every component and returns the
// administrator's credentials.
func writePKI(l layout, p *pki) (admin keyPair, err error) {
	if err := os.MkdirAll(l.path("pki"), 0o700); err != nil {
		return keyPair{}, err
	}
	if err := os.WriteFile(l.pki("ca.crt"), p.caPEM, 0o644); err != nil {
		return keyPair{}, err
	}
	serving, err := p.issue(pkix.Name{CommonName: "kube-apiserver"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP), net.ParseIP(kubernetesServiceIP)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return keyPair{}, err
	}
	if err := serving.write(l.path("pki"), "apiserver"); err != nil {
		return keyPair{}, err
	}
	kubeletClient, err := p.issue(pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, nil, nil)
	if err != nil {
		return keyPair{}, err
	}
	if err := kubeletClient.write(l.path("pki"), "apiserver-kubelet-client"); err != nil {
		return keyPair{}, err
	}
	if err := writeServiceAccountKeys(l.path("pki")); err != nil {
		return keyPair{}, err
	}

	server := fmt.Sprintf("https://127.0.0.1:%d", APIServerPort)
	for _, u := range []struct {
		file    string
		subject pkix.Name
	}{
		{"admin", pkix.Name{CommonName: "kubetest-admin", Organization: []string{"system:masters"}}},
		{"controller-manager", pkix.Name{CommonName: "system:kube-controller-manager"}},
		{"scheduler", pkix.Name{CommonName: "system:kube-scheduler"}},
		{"kubelet", pkix.Name{CommonName: "system:node:" + NodeName, Organization: []string{"system:nodes"}}},
	} {
		kp, err := p.issue(u.subject, nil, nil)
		if err != nil {
			return keyPair{}, err
		}
		if err := p.writeKubeconfig(l.kubeconfig(u.file), server, u.subject.CommonName, kp); err != nil {
			return keyPair{}, err
		}
		if u.file == "admin" {
			admin = kp
		}
	}
	return admin, nil
}

// writeConfigs writes the configuration files of containerd, the CNI network and the
// kubelet. name is the cluster's name, which its cgroups and CNI network carry too.
func writeConfigs(l layout, name string) error {
	for _, d := range []string{"cni/net.d", "cni/ipam", "logs", "pod-logs", "kubelet", "containerd"} {
		if err := os.MkdirAll(l.path(d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		l.path("containerd.toml"):                containerdConfig(l),
		l.path("cni/net.d/10-kubetest.conflist"): cniConfig(l, name),
		l.path("kubelet.yaml"):                   kubeletConfig(l, name),
		// The pods' resolv.conf: no name server, as there is no network past the node.
		l.path("resolv.conf"): "",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig keeps all of containerd's files under the cluster's directory, its pod
// network namespaces included (netns_mounts_under_state_dir), so that removing the directory
// removes them. The shims' sockets are the exception: containerd 1.6 puts them in
// /run/containerd/s whatever the configuration says.
func containerdConfig(l layout) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # This process lacks CAP_SYS_RESOURCE on some machines: sandboxes then keep the
  # oom_score_adj they inherit instead of failing to lower it to -998.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`,
		l.path("containerd/root"), l.path("containerd/state"), l.containerdSocket(),
		l.path("containerd/opt"), PauseImage, l.path("containerd/runc"),
		cniBinDir, l.path("cni/net.d"))
}

// cniBinDir is where Debian's containernetworking-plugins package installs the plugins.
const cniBinDir = "/usr/lib/cni"

// cniConfig is one bridge network for every pod. Its name is the cluster's so that the
// results libcni caches in /var/lib/cni/results, named after the network, can be told apart.
func cniConfig(l layout, name string) string {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      "cni0",
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": PodCIDR}}},
				"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				"dataDir": l.path("cni/ipam"),
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		panic(err) // a literal of maps and strings always marshals
	}
	return string(b) + "\n"
}

// kubeletConfig: cgroupfs (there is no systemd), cgroup v1 allowed (kubelets from 1.35 on
// refuse it unless told), swap tolerated, the API server's client certificates trusted, and
// eviction and image garbage collection kept from acting on a busy test machine's disk. The
// pods' cgroups go under a cgroup named after the cluster, not the machine's kubepods, and
// the directories the kubelet would otherwise make on the machine (pod logs, FlexVolume
// plugins) under the cluster's directory.
func kubeletConfig(l layout, name string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
podLogsDir: %s
volumePluginDir: %s
resolvConf: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`, l.containerdSocket(), name, l.path("pod-logs"), l.path("volume-plugins"), l.path("resolv.conf"), l.pki("ca.crt"))
}

// componentArgs returns the command line of each component, binaries relative to binDir.
func componentArgs(l layout, binDir string) map[string][]string {
	bin := func(name string) string { return filepath.Join(binDir, name) }
	return map[string][]string{
		"etcd": {bin("etcd"),
			"--name=kubetest",
			"--data-dir=" + l.path("etcd"),
			"--listen-client-urls=http://127.0.0.1:2379",
			"--advertise-client-urls=http://127.0.0.1:2379",
			"--listen-peer-urls=http://127.0.0.1:2380",
			"--initial-advertise-peer-urls=http://127.0.0.1:2380",
			"--initial-cluster=kubetest=http://127.0.0.1:2380",
			"--unsafe-no-fsync",
			"--log-level=warn",
		},
		"containerd": {"containerd", "--config=" + l.path("containerd.toml"), "--log-level=warn"},
		"kube-apiserver": {bin("kube-apiserver"),
			"--etcd-servers=http://127.0.0.1:2379",
			"--advertise-address=" + NodeIP,
			fmt.Sprintf("--secure-port=%d", APIServerPort),
			"--tls-cert-file=" + l.pki("apiserver.crt"),
			"--tls-private-key-file=" + l.pki("apiserver.key"),
			"--client-ca-file=" + l.pki("ca.crt"),
			"--kubelet-client-certificate=" + l.pki("apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + l.pki("apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types=InternalIP",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + l.pki("sa.pub"),
			"--service-account-signing-key-file=" + l.pki("sa.key"),
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
			"--profiling=false",
		},
		"kube-controller-manager": {bin("kube-controller-manager"),
			"--kubeconfig=" + l.kubeconfig("controller-manager"),
			"--bind-address=127.0.0.1",
			"--leader-elect=false",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + l.pki("sa.key"),
			"--root-ca-file=" + l.pki("ca.crt"),
			// It would make the machine's /usr/libexec/kubernetes/… otherwise.
			"--flex-volume-plugin-dir=" + l.path("volume-plugins"),
			// Volume claims of StorageClass get hostPath volumes in hostPathPVDir, which a
			// single node can mount: upstream's provisioner for tests.
			"--enable-hostpath-provisioner=true",
			"--profiling=false",
		},
		"kube-scheduler": {bin("kube-scheduler"),
			"--kubeconfig=" + l.kubeconfig("scheduler"),
			"--bind-address=127.0.0.1",
			"--leader-elect=false",
			"--profiling=false",
		},
		"kubelet": {bin("kubelet"),
			"--config=" + l.path("kubelet.yaml"),
			"--kubeconfig=" + l.kubeconfig("kubelet"),
			"--root-dir=" + l.path("kubelet"),
			// Its serving certificate, which it makes itself; not relative to the root.
			"--cert-dir=" + l.path("kubelet/pki"),
			"--hostname-override=" + NodeName,
			"--node-ip=" + NodeIP,
		},
	}
}
