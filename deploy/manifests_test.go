package deploy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox/kubernetes"
)

// imageEnv is the environment agentd's image gives its containers (cmd/agentd-image), under
// what the Deployment sets.
var imageEnv = map[string]string{"AGENTD_ADDR": "0.0.0.0:3000", "AGENTD_DATA_DIR": "/var/lib/agentd"}

// manifests are the objects a kustomization builds, decoded.
type manifests struct {
	objects []runtime.Object
}

// build builds the kustomization in dir as `kubectl apply -k` does and decodes every object
// strictly (an unknown field is an error) into its API type.
func build(t *testing.T, dir string) manifests {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	codecs := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)
	var out manifests
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := codecs.UniversalDeserializer().Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("decode %s %s: %v\n%s", r.GetKind(), r.GetName(), err, y)
		}
		out.objects = append(out.objects, obj)
	}
	return out
}

// one returns the only object of type T named name (a generated name's prefix for
// ConfigMaps, which carry a hash of their contents), failing the test otherwise.
func one[T runtime.Object](t *testing.T, m manifests, name string) T {
	t.Helper()
	var found []T
	for _, obj := range m.objects {
		o, ok := obj.(T)
		if !ok {
			continue
		}
		got := any(o).(interface{ GetName() string }).GetName()
		if _, isCM := any(o).(*corev1.ConfigMap); got == name || isCM && generatedFrom(got, name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T named %s, want one", len(found), zero, name)
	}
	return found[0]
}

// generatedFrom reports whether name is a generated name of prefix: prefix-<hash>.
func generatedFrom(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	return ok && len(rest) == 10 && !strings.Contains(rest, "-")
}

// container is the Deployment's agentd container.
func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "agentd" {
			return c
		}
	}
	t.Fatal("the Deployment has no container agentd")
	return corev1.Container{}
}

// volume is the pod's volume mounted at path (or at a directory above it), and the path
// relative to the mount.
func volume(t *testing.T, d *appsv1.Deployment, path string) (corev1.Volume, string) {
	t.Helper()
	c := container(t, d)
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				return v, rel
			}
		}
	}
	t.Fatalf("nothing of the pod is mounted at %s", path)
	return corev1.Volume{}, ""
}

// serverConfig loads agentd's configuration as a replica of the Deployment does: the image's
// environment, the ConfigMap's, the container's own (the Secrets' values stood for), and
// the config file the ConfigMap mounts.
func serverConfig(t *testing.T, m manifests) config.Config {
	t.Helper()
	d := one[*appsv1.Deployment](t, m, "agentd")
	c := container(t, d)
	env := map[string]string{}
	for k, v := range imageEnv {
		env[k] = v
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v: want a ConfigMap", from)
		}
		for k, v := range one[*corev1.ConfigMap](t, m, from.ConfigMapRef.Name).Data {
			env[k] = v
		}
	}
	secrets := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			secrets[e.Name] = ref.Name + "/" + ref.Key
			env[e.Name] = map[string]string{
				"agentd-database/url": "postgres://agentd@db.internal:5432/agentd?sslmode=verify-full",
				"agentd-admin/key":    "admin-key-0123456789",
			}[ref.Name+"/"+ref.Key]
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = "agentd-7d9f8c6b5-x2x4q"
		default:
			t.Fatalf("env %s: from %+v", e.Name, e.ValueFrom)
		}
	}
	if want := map[string]string{"AGENTD_DATABASE": "agentd-database/url", "AGENTD_ADMIN_KEY": "agentd-admin/key"}; !equalMaps(secrets, want) {
		t.Errorf("secret environment %v, want %v", secrets, want)
	}

	// The config file is the ConfigMap's key that AGENTD_CONFIG names, through its mount.
	v, key := volume(t, d, env["AGENTD_CONFIG"])
	if v.ConfigMap == nil {
		t.Fatalf("AGENTD_CONFIG %s is on volume %s, not a ConfigMap's", env["AGENTD_CONFIG"], v.Name)
	}
	file := filepath.Join(t.TempDir(), "agentd.toml")
	if err := os.WriteFile(file, []byte(one[*corev1.ConfigMap](t, m, v.ConfigMap.Name).Data[key]), 0o644); err != nil {
		t.Fatal(err)
	}
	env["AGENTD_CONFIG"] = file
	args := slices.Clone(c.Args)
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args %q: want serve", c.Args)
	}
	cfg, err := config.Load(args[1:], func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("agentd refuses the Deployment's settings: %v", err)
	}
	return cfg
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestManifests: deploy/ builds into the objects agentd needs and nothing else, and each says
// what agentd expects. Its settings are accepted by agentd's own configuration: the
// kubernetes backend, in-cluster, on PostgreSQL, with the keyring Secret and its own image as
// the runtime image, and a default spec with an image. The sandboxes' namespace has the Pod
// Security level their init container needs, agentd's the restricted level its pods meet.
// The Role grants exactly what the backend checks for, to the Deployment's service account.
// The probes ask /alive and /ready on the port the server listens on, which the Service
// targets.
func TestManifests(t *testing.T) {
	m := build(t, ".")
	var kinds []string
	for _, obj := range m.objects {
		o := obj.(interface {
			GetName() string
			GetNamespace() string
		})
		kind := fmt.Sprintf("%T", obj)
		if _, ok := obj.(*corev1.Namespace); !ok && o.GetNamespace() == "" {
			t.Errorf("%s %s has no namespace", kind, o.GetName())
		}
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	want := []string{"*v1.ConfigMap", "*v1.ConfigMap", "*v1.Deployment", "*v1.Namespace", "*v1.Namespace",
		"*v1.PodDisruptionBudget", "*v1.Role", "*v1.RoleBinding", "*v1.Service", "*v1.ServiceAccount"}
	if !slices.Equal(kinds, want) {
		t.Errorf("objects %v, want %v", kinds, want)
	}

	cfg := serverConfig(t, m)
	d := one[*appsv1.Deployment](t, m, "agentd")
	c := container(t, d)
	if cfg.SandboxBackend != "kubernetes" || cfg.Kubeconfig != "" || !cfg.Postgres() {
		t.Errorf("backend %s, kubeconfig %q, postgres %v: want kubernetes in-cluster on PostgreSQL", cfg.SandboxBackend, cfg.Kubeconfig, cfg.Postgres())
	}
	if cfg.KubernetesRuntimeImage != c.Image {
		t.Errorf("runtime image %q, the Deployment's %q", cfg.KubernetesRuntimeImage, c.Image)
	}
	if !slices.ContainsFunc(cfg.Specs, func(s config.SpecConfig) bool { return s.ID == cfg.DefaultSpec && s.Image != "" }) {
		t.Errorf("the default spec %q has no image in %+v: the kubernetes backend refuses it", cfg.DefaultSpec, cfg.Specs)
	}
	if v, key := volume(t, d, cfg.KeyringFile); v.Secret == nil || v.Secret.SecretName != "agentd-keyring" || key != "keyring.json" {
		t.Errorf("the keyring file %s is %s of volume %+v: want keyring.json of the Secret agentd-keyring", cfg.KeyringFile, key, v)
	}
	for _, dir := range []string{cfg.DataDir, "/tmp"} {
		if v, key := volume(t, d, dir); v.EmptyDir == nil || key != "." {
			t.Errorf("%s is not a volume of its own (the root file system is read-only): %+v", dir, v)
		}
	}

	sandboxes := one[*corev1.Namespace](t, m, cfg.KubernetesNamespace)
	if got := sandboxes.Labels["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("the sandboxes' namespace enforces Pod Security %q: their init container needs privileged", got)
	}
	own := one[*corev1.Namespace](t, m, d.Namespace)
	if got := own.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("agentd's namespace enforces Pod Security %q, want restricted", got)
	}
	pod := d.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want the image's user, non-root, the runtime's seccomp profile", sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v: want no escalation, a read-only root, no capability", sc)
	}

	role := one[*rbacv1.Role](t, m, "agentd-sandboxes")
	if role.Namespace != cfg.KubernetesNamespace {
		t.Errorf("the Role is in %s, the sandboxes in %s", role.Namespace, cfg.KubernetesNamespace)
	}
	var granted, needed []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted = append(granted, g+"/"+res+" "+v)
				}
			}
		}
	}
	for _, p := range kubernetes.Permissions {
		res := p.Resource
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
		for _, v := range p.Verbs {
			needed = append(needed, p.Group+"/"+res+" "+v)
		}
	}
	slices.Sort(granted)
	slices.Sort(needed)
	if !slices.Equal(granted, needed) {
		t.Errorf("the Role grants %v, the backend needs %v", granted, needed)
	}
	rb := one[*rbacv1.RoleBinding](t, m, "agentd-sandboxes")
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: pod.ServiceAccountName, Namespace: d.Namespace}
	if rb.Namespace != role.Namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !slices.Equal(rb.Subjects, []rbacv1.Subject{wantSubject}) {
		t.Errorf("the RoleBinding %+v does not bind the Role to %+v", rb, wantSubject)
	}
	one[*corev1.ServiceAccount](t, m, pod.ServiceAccountName)

	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v: want several", d.Spec.Replicas)
	}
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if _, port, _ := net.SplitHostPort(cfg.Addr); port != fmt.Sprint(ports["http"]) {
		t.Errorf("the server listens on %s, the port http is %d", cfg.Addr, ports["http"])
	}
	if _, port, _ := net.SplitHostPort(cfg.AgentServerAddr); port != fmt.Sprint(ports["agent-server"]) {
		t.Errorf("the agent-server API listens on %s, the port agent-server is %d", cfg.AgentServerAddr, ports["agent-server"])
	}
	for name, probe := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"startup": {c.StartupProbe, "/alive"}, "liveness": {c.LivenessProbe, "/alive"}, "readiness": {c.ReadinessProbe, "/ready"}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path || probe.p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("%s probe %+v: want GET %s on the port http", name, probe.p, probe.path)
		}
	}

	svc := one[*corev1.Service](t, m, "agentd")
	if svc.Namespace != d.Namespace || !selects(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("the Service %s/%s selects %v, not the Deployment's pods", svc.Namespace, svc.Name, svc.Spec.Selector)
	}
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.StrVal]; !ok {
			t.Errorf("the Service's port %s targets %v, which the pods lack", p.Name, p.TargetPort)
		}
	}
	pdb := one[*policyv1.PodDisruptionBudget](t, m, "agentd")
	if !selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the PodDisruptionBudget selects %v, not the Deployment's pods", pdb.Spec.Selector.MatchLabels)
	}
}

// selects reports whether a selector's labels select an object with labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestOverlay: an installation's overlay, as docs/kubernetes.md shows one, names its image
// once and the sandboxes' runtime image follows; its replicas and its settings merge in, the
// base's settings stay, and its config file replaces the base's.
func TestOverlay(t *testing.T) {
	dir := t.TempDir()
	deployDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(dir, deployDir) // kustomize takes relative paths only
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example.com/agentd@sha256:e52f84fed8ceb9aef2e48a09fc235a38b4265ccc80cf5514817221fa0147a5c0"
	overlay := fmt.Sprintf(`resources:
  - %s
images:
  - name: agentd
    newName: registry.example.com/agentd
    digest: sha256:e52f84fed8ceb9aef2e48a09fc235a38b4265ccc80cf5514817221fa0147a5c0
replicas:
  - name: agentd
    count: 3
configMapGenerator:
  - name: agentd
    namespace: agentd
    behavior: merge
    literals:
      - AGENTD_PUBLIC_URL=https://agentd.example.com
  - name: agentd-config
    namespace: agentd
    behavior: replace
    files:
      - agentd.toml
`, base)
	specs := "[[sandbox_specs]]\nid = \"default\"\nimage = \"registry.example.com/sandbox:1\"\n"
	for name, content := range map[string]string{"kustomization.yaml": overlay, "agentd.toml": specs} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := build(t, dir)
	d := one[*appsv1.Deployment](t, m, "agentd")
	if got := container(t, d).Image; got != image {
		t.Errorf("the Deployment's image is %s, want %s", got, image)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("%d replicas, want 3", *d.Spec.Replicas)
	}
	cfg := serverConfig(t, m)
	if cfg.KubernetesRuntimeImage != image || cfg.PublicURL != "https://agentd.example.com" || cfg.SandboxBackend != "kubernetes" {
		t.Errorf("runtime image %s, public URL %s, backend %s", cfg.KubernetesRuntimeImage, cfg.PublicURL, cfg.SandboxBackend)
	}
	if len(cfg.Specs) != 1 || cfg.Specs[0].Image != "registry.example.com/sandbox:1" {
		t.Errorf("specs %+v, want the overlay's", cfg.Specs)
	}
}
