package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/agentd/agentd/internal/ociimage"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
)

// The images the test builds and imports, as testdata/e2e names them.
const (
	agentdImage  = "localhost/agentd-e2e/agentd:test"
	sandboxImage = "localhost/agentd-e2e/sandbox:test"
)

// Namespaces and names of deploy/.
const (
	namespace        = "agentd"
	sandboxNamespace = "agentd-sandboxes"
	deployment       = "agentd"
)

// images are the tarballs the test imports, the agentd binary in agentdImage and the
// runtime-only build packed into it.
type images struct {
	agentd, sandbox, binary, runtime string
}

// buildImages builds agentd as make build does (the full build with the runtime-only build
// packed in), its image as make image does (cmd/agentd-image), and the sandboxes' image of
// the machine's bash and core utilities, into dir.
func buildImages(ctx context.Context, dir string) (images, error) {
	im := images{
		binary:  filepath.Join(dir, "agentd"),
		runtime: filepath.Join(dir, "agentd-runtime"),
		agentd:  filepath.Join(dir, "agentd-image.tar"),
		sandbox: filepath.Join(dir, "sandbox-image.tar"),
	}
	const ldflags = "-s -w -X main.version=deploy-e2e"
	for _, argv := range [][]string{
		{"go", "build", "-trimpath", "-tags", "agentd_runtime_only", "-ldflags", ldflags, "-o", im.runtime, "../cmd/agentd"},
		{"go", "build", "-trimpath", "-ldflags", ldflags, "-o", im.binary, "../cmd/agentd"},
		{"sh", "../scripts/pack-runtime.sh", im.binary, im.runtime},
		{"go", "run", "../cmd/agentd-image", "-binary", im.binary, "-o", im.agentd, "-name", agentdImage},
	} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return images{}, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	rootfs, err := dockertest.RootfsTar(dockertest.ImageTools)
	if err != nil {
		return images{}, err
	}
	layer, err := ociimage.Tar(bytes.NewReader(rootfs))
	if err != nil {
		return images{}, err
	}
	_, err = ociimage.Write(im.sandbox, ociimage.Image{
		Name: sandboxImage, Layers: []ociimage.Layer{layer}, Env: []string{"PATH=" + dockertest.ImagePath},
	})
	return im, err
}

// runAgentd runs the agentd binary to its end and returns what it printed.
func runAgentd(ctx context.Context, binary string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, binary, args...).CombinedOutput()
}

// overlay writes the test's overlay (testdata/e2e) into a directory of its own, on deploy/,
// and returns the directory.
func overlay(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(dir, here)
	if err != nil {
		t.Fatal(err)
	}
	kust, err := os.ReadFile("testdata/e2e/overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := os.ReadFile("testdata/e2e/agentd.toml")
	if err != nil {
		t.Fatal(err)
	}
	kust = append([]byte("resources:\n  - "+base+"\n"), kust...)
	for name, data := range map[string][]byte{"kustomization.yaml": kust, "agentd.toml": specs} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// apply builds the kustomization in dir and applies every object to the cluster, in
// kustomize's order (namespaces first), with server-side apply, as kubectl apply
// --server-side -k does.
func apply(ctx context.Context, t *testing.T, c *kubetest.Cluster, dir string) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, r := range m.Resources() {
		fields, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: fields}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "agentd-deploy-test", Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// createSecret creates a Secret of deploy/'s namespace.
func createSecret(ctx context.Context, t *testing.T, c *kubetest.Cluster, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
	if _, err := c.Client.CoreV1().Secrets(namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
}

// waitRollout waits until the Deployment's replicas are all of its latest template, ready,
// and the only pods it has, and returns those pods by name.
func waitRollout(ctx context.Context, t *testing.T, c *kubetest.Cluster, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, timeout, "the Deployment's replicas to be ready", func() (bool, string) {
		d, err := c.Client.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := *d.Spec.Replicas
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.Replicas != want {
			return false, fmt.Sprintf("deployment status %+v", st)
		}
		list, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return false, err.Error()
		}
		pods = pods[:0]
		var states []string
		for _, p := range list.Items {
			states = append(states, p.Name+" "+string(p.Status.Phase))
			if p.DeletionTimestamp == nil && ready(&p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == int(want) && len(list.Items) == int(want), strings.Join(states, ", ")
	})
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dumpState logs what the cluster says of deploy/'s pods and the sandboxes' (their states
// and agentd's logs), for a test that failed.
func dumpState(t *testing.T, c *kubetest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ns := range []string{namespace, sandboxNamespace} {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("list the pods of %s: %v", ns, err)
			continue
		}
		for _, p := range pods.Items {
			t.Logf("pod %s/%s: %s, conditions %+v, containers %+v, init containers %+v", ns, p.Name, p.Status.Phase,
				p.Status.Conditions, p.Status.ContainerStatuses, p.Status.InitContainerStatuses)
			if ns != namespace {
				continue
			}
			tail := int64(300)
			logs, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "agentd", TailLines: &tail}).DoRaw(ctx)
			t.Logf("logs of %s (%v):\n%s", p.Name, err, logs)
		}
	}
	events, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			if e.Type != corev1.EventTypeNormal {
				t.Logf("event %s/%s %s: %s: %s", e.Namespace, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
			}
		}
	}
}

// killContainer kills every process of a running container with SIGKILL, found on this
// machine by the cgroup the kubelet made for it (the cluster's containers are this machine's
// processes), and returns how many it killed.
func killContainer(t *testing.T, containerID string) int {
	t.Helper()
	_, id, ok := strings.Cut(containerID, "://")
	if !ok || len(id) < 12 {
		t.Fatalf("container id %q", containerID)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || fmt.Sprint(pid) != e.Name() {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !bytes.Contains(cg, []byte(id)) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("no process of container %s found", id)
	}
	return killed
}

// execIn runs argv in a container of a pod and returns its standard output.
func execIn(ctx context.Context, c *kubetest.Cluster, ns, pod, container string, argv ...string) (string, error) {
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	rt, upgrader, err := c.StreamTransport()
	if err != nil {
		return "", err
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, upgrader, http.MethodPost, req.URL())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec %s in %s/%s: %w (stderr %q)", strings.Join(argv, " "), ns, pod, err, stderr.String())
	}
	return stdout.String(), nil
}

// sandboxPod is the pod of a sandbox of the kubernetes backend.
func sandboxPod(ctx context.Context, t *testing.T, c *kubetest.Cluster, sandboxID string) *corev1.Pod {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(sandboxNamespace).Get(ctx, "agentd-sb-"+sandboxID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sandbox's pod: %v", err)
	}
	return p
}

// cordon makes the node unschedulable, or schedulable again.
func cordon(ctx context.Context, t *testing.T, c *kubetest.Cluster, unschedulable bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, kubetest.NodeName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon the node (%t): %v", unschedulable, err)
	}
}

// deletePodNow deletes a pod with no grace period.
func deletePodNow(ctx context.Context, t *testing.T, c *kubetest.Cluster, name string) {
	t.Helper()
	err := c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete pod %s: %v", name, err)
	}
}

// waitFor polls cond until it holds, failing the test after timeout with cond's last word.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(delay)
	}
}
