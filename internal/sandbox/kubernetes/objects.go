package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/podinit"
)

// Labels on every object of a sandbox. List selects on the first two.
const (
	labelManagedBy    = "app.kubernetes.io/managed-by" // managedBy
	labelInstallation = "agentd.dev/installation"      // Options.Installation
	labelSandbox      = "agentd.dev/sandbox"           // the sandbox id
	labelOwner        = "agentd.dev/owner"             // the owner's id, or a digest of it
	annotationOwner   = "agentd.dev/owner-id"          // the owner's id as it is
	managedBy         = "agentd"
)

// annotationPod on a sandbox's Secret says whether its pod should run: podRunning from the
// start and after a resume, podPaused from a pause on. A sandbox whose pod should run and is
// not there has vanished (removed by someone else, evicted), which Inspect reports as gone.
// A Secret without it (made before it existed) is read as before: no pod, a paused sandbox.
const (
	annotationPod = "agentd.dev/pod"
	podRunning    = "running"
	podPaused     = "paused"
)

// Paths inside a sandbox's pod.
const (
	binDir            = "/.agentd/bin"       // the shared volume the init container copies agentd into
	binaryInPod       = binDir + "/agentd"   // the runtime, as commands see it
	secretDir         = "/.agentd/secret"    // the Secret's volume: key, certificate, its key
	initWorkspace     = "/.agentd/workspace" // the workspace, in the init container
	defaultWorkingDir = "/workspace"         // the workspace, when the spec names none
	runtimePort       = 8443                 // where the runtime serves TLS
	initContainer     = "agentd-init"        // copies agentd, gives the workspace, sets the rules
	sandboxContainer  = "sandbox"            // the spec's image, running the runtime
	nodeIPEnv         = "AGENTD_NODE_IP"     // the init container's node address (downward API)
	tmpDir            = "/tmp"               // a memory-backed volume when the spec sizes /tmp
	defaultHome       = "/tmp"               // HOME when the spec sets none: writable by the sandbox uid
	secretMode        = int32(0o400)         // the Secret's files: root's alone
)

// Keys of a sandbox's Secret.
const (
	keySession = "session-key"
	keyCert    = "tls.crt"
	keyTLSKey  = "tls.key"
	// keyPod is the pod's manifest, which Resume creates again; it is not mounted.
	keyPod = "pod.json"
)

// defaultCommand starts the runtime when a spec names no command.
var defaultCommand = []string{"agentd", "runtime"}

// objectName is the name of a sandbox's pod, Secret and NetworkPolicy; its workspace volume
// claim adds "-ws".
func objectName(id string) string { return "agentd-sb-" + id }

func claimName(id string) string { return objectName(id) + "-ws" }

// validID reports whether id can be part of an object's name (a DNS label).
func validID(id string) bool {
	return id != "" && len(objectName(id))+len("-ws") <= validation.DNS1123LabelMaxLength &&
		len(validation.IsDNS1123Label(objectName(id))) == 0
}

func errInvalidID(id string) error {
	return fmt.Errorf("sandbox id %q cannot name a Kubernetes object: want lowercase letters, digits and '-'", id)
}

// ownerLabel is the owner's id when it is a label value, else a digest of it.
func ownerLabel(owner string) string {
	if len(validation.IsValidLabelValue(owner)) == 0 {
		return owner
	}
	sum := sha256.Sum256([]byte(owner))
	return "sha256-" + hex.EncodeToString(sum[:])[:40]
}

func (b *Backend) selector() string {
	return labelManagedBy + "=" + managedBy + "," + labelInstallation + "=" + b.installation
}

func (b *Backend) meta(id, owner, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: b.ns,
		Labels: map[string]string{
			labelManagedBy:    managedBy,
			labelInstallation: b.installation,
			labelSandbox:      id,
			labelOwner:        ownerLabel(owner),
		},
		Annotations: map[string]string{annotationOwner: owner},
	}
}

func workingDir(spec sandbox.Spec) string {
	if spec.WorkingDir == "" {
		return defaultWorkingDir
	}
	return path.Clean(spec.WorkingDir)
}

// pod is the sandbox's pod: the init container, then the spec's image running the runtime
// as root with the capabilities it needs to start its commands as the sandbox uid (as in the
// docker backend), reached on runtimePort over TLS.
func (b *Backend) pod(req sandbox.StartRequest) *corev1.Pod {
	id, spec := req.ID, req.Spec
	workdir := workingDir(spec)
	network := sandbox.NetworkOf(spec)
	initArgs := []string{b.binary, "sandbox-init",
		"--" + podinit.FlagCopyTo, binaryInPod,
		"--" + podinit.FlagWorkspace, initWorkspace,
		"--" + podinit.FlagUID, strconv.Itoa(b.uid),
		"--" + podinit.FlagNetwork, network,
	}
	if network == sandbox.NetworkEgress {
		initArgs = append(initArgs, "--"+podinit.FlagDeny, podinit.FormatPrefixes(b.deny), "--"+podinit.FlagDenyEnv, nodeIPEnv)
	}

	argv := slices.Clone(spec.Command)
	if len(argv) == 0 {
		argv = slices.Clone(defaultCommand)
	}
	if argv[0] == "agentd" {
		argv[0] = binaryInPod
	}
	argv = append(argv,
		"--listen", "tcp::"+strconv.Itoa(runtimePort),
		"--workspace", workdir,
		"--sandbox-id", id,
		"--key-file", path.Join(secretDir, keySession),
		"--tls-cert", path.Join(secretDir, keyCert),
		"--tls-key", path.Join(secretDir, keyTLSKey),
		"--sandbox-uid", strconv.Itoa(b.uid))
	argv = req.RuntimeArgs(argv)
	env := []corev1.EnvVar{{Name: "TERM", Value: "xterm-256color"}}
	if _, ok := spec.InitialEnv["HOME"]; !ok {
		env = append(env, corev1.EnvVar{Name: "HOME", Value: defaultHome})
	}
	for _, k := range slices.Sorted(maps.Keys(spec.InitialEnv)) {
		env = append(env, corev1.EnvVar{Name: k, Value: spec.InitialEnv[k]})
	}

	root := int64(0)
	no, yes := false, true
	volumes := []corev1.Volume{
		{Name: "agentd-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "agentd-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  objectName(id),
			DefaultMode: new(secretMode),
			Items: []corev1.KeyToPath{
				{Key: keySession, Path: keySession},
				{Key: keyCert, Path: keyCert},
				{Key: keyTLSKey, Path: keyTLSKey},
			},
		}}},
		{Name: "workspace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(id)}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "agentd-bin", MountPath: binDir, ReadOnly: true},
		{Name: "agentd-secret", MountPath: secretDir, ReadOnly: true},
		{Name: "workspace", MountPath: workdir},
	}
	if t := spec.Limits.TmpBytes; t > 0 {
		volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(t, resource.BinarySI),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: tmpDir})
	}

	meta := b.meta(id, req.OwnerID, objectName(id))
	return &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			// A pause or a destroy gives its own (deletePod); this bounds other deletions.
			TerminationGracePeriodSeconds: new(int64(2)),
			// Nothing of the cluster's: no service account token, no service variables.
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			InitContainers: []corev1.Container{{
				Name:            initContainer,
				Image:           b.image,
				ImagePullPolicy: corev1.PullPolicy(b.pullPolicy),
				Command:         initArgs,
				// Its error, in the pod's status, says why a start failed.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Env: []corev1.EnvVar{{Name: nodeIPEnv, ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"},
				}}},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					RunAsGroup:               &root,
					RunAsNonRoot:             &no,
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities: &corev1.Capabilities{
						Drop: []corev1.Capability{"ALL"},
						Add:  []corev1.Capability{"NET_ADMIN", "CHOWN"},
					},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "agentd-bin", MountPath: binDir},
					{Name: "workspace", MountPath: initWorkspace},
				},
			}},
			Containers: []corev1.Container{{
				Name:                     sandboxContainer,
				Image:                    spec.Image,
				ImagePullPolicy:          corev1.PullPolicy(b.pullPolicy),
				Command:                  argv,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Env:                      env,
				WorkingDir:               workdir,
				Resources:                b.resources(spec.Limits),
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					RunAsGroup:               &root,
					RunAsNonRoot:             &no,
					AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{
						Drop: []corev1.Capability{"ALL"},
						Add:  []corev1.Capability{"SETUID", "SETGID", "KILL", "SETPCAP"},
					},
				},
				Ports:        []corev1.ContainerPort{{Name: "runtime", ContainerPort: runtimePort, Protocol: corev1.ProtocolTCP}},
				VolumeMounts: mounts,
			}},
			Volumes: volumes,
		},
	}
}

// resources maps the spec's limits: memory and CPU are limits, of which the pod requests
// RequestShare; disk bounds the container's ephemeral storage (its writable layer, its logs).
func (b *Backend) resources(l sandbox.Limits) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if l.MemoryBytes > 0 {
		r.Limits[corev1.ResourceMemory] = *resource.NewQuantity(l.MemoryBytes, resource.BinarySI)
		r.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(float64(l.MemoryBytes)*b.requestShare), resource.BinarySI)
	}
	if l.CPUs > 0 {
		r.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(l.CPUs*1000), resource.DecimalSI)
		r.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(1, int64(l.CPUs*1000*b.requestShare)), resource.DecimalSI)
	}
	if l.DiskBytes > 0 {
		r.Limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(l.DiskBytes, resource.BinarySI)
	}
	return r
}

// claim is the workspace's volume claim: it outlives the pod, which is how a paused
// sandbox keeps its workspace.
func (b *Backend) claim(req sandbox.StartRequest) *corev1.PersistentVolumeClaim {
	size := req.Spec.Limits.DiskBytes
	if size <= 0 {
		size = b.wsSize
	}
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: b.meta(req.ID, req.OwnerID, claimName(req.ID)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI),
			}},
		},
	}
	if b.storageClass != "" {
		c.Spec.StorageClassName = new(b.storageClass)
	}
	return c
}

// networkPolicy says to a cluster whose network plugin enforces policies what the pod's own
// rules enforce in any cluster: egress reaches everything but the denied prefixes (and DNS),
// none reaches nothing; and only the runtime's port is open to the cluster.
func (b *Backend) networkPolicy(req sandbox.StartRequest) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: b.meta(req.ID, req.OwnerID, objectName(req.ID)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelSandbox: req.ID, labelInstallation: b.installation}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: new(intstr.FromInt32(runtimePort))}},
			}},
		},
	}
	if sandbox.NetworkOf(req.Spec) != sandbox.NetworkEgress {
		return np
	}
	var v4, v6 []string
	for _, p := range b.deny {
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: v4}}, {IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: v6}}}},
		{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: new(intstr.FromInt32(53))}, {Protocol: &tcp, Port: new(intstr.FromInt32(53))}}},
	}
	return np
}
