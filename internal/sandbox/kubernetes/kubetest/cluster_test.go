package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/remotecommand"
	watchtools "k8s.io/client-go/tools/watch"
)

// TestCluster brings a cluster up, runs a pod of the busybox image on it and talks to the
// pod every way the tests of a Kubernetes backend will (logs, exec, its IP from this
// process), deletes it, closes the cluster, and checks that nothing of it is left.
func TestCluster(t *testing.T) {
	dirsBefore := existingHostDirs()
	c := Start(t)
	before := readHostState(t, c, dirsBefore)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const marker = "kubetest-marker"
	pods := c.Client.CoreV1().Pods(metav1.NamespaceDefault)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec: corev1.PodSpec{
			// sh and httpd as PID 1 ignore SIGTERM: without this, deletion waits 30 s.
			TerminationGracePeriodSeconds: new(int64(0)),
			Containers: []corev1.Container{{
				Name:            "busybox",
				Image:           BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "mkdir /tmp/www && echo " + marker + " > /tmp/www/index.html && " +
					"echo hello from the pod && exec httpd -f -p 8080 -h /tmp/www"},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	start := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	running := waitPod(ctx, t, c, pod.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	t.Logf("pod Running %.1fs after create", time.Since(start).Seconds())
	ready := waitPod(ctx, t, c, pod.Name, func(p *corev1.Pod) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	t.Logf("pod Ready (httpd listening) %.1fs after create", time.Since(start).Seconds())

	// The shims' sockets are outside the cluster's directory: Close must remove them too.
	shimSocks := shimSocketsOf(c.Dir)
	if len(shimSocks) == 0 {
		t.Fatal("no shim of the running pod names its socket")
	}

	ip := net.ParseIP(ready.Status.PodIP)
	if _, pods, _ := net.ParseCIDR(PodCIDR); ip == nil || !pods.Contains(ip) {
		t.Fatalf("pod IP %q (Running: %q), want one in %s", ready.Status.PodIP, running.Status.PodIP, PodCIDR)
	}

	logs, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "hello from the pod") {
		t.Fatalf("pod logs: %q, %v", logs, err)
	}

	// Exec, with stdin, over SPDY through the namespace's dialer.
	execStart := time.Now()
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(metav1.NamespaceDefault).
		Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: "busybox",
			Command:   []string{"sh", "-c", "cat; echo; hostname"},
			Stdin:     true,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	rt, upgrader, err := c.StreamTransport()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := remotecommand.NewSPDYExecutorForTransports(rt, upgrader, http.MethodPost, req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin: strings.NewReader("from stdin"), Stdout: &stdout, Stderr: &stderr,
	}); err != nil {
		t.Fatalf("exec: %v (stderr %q)", err, stderr.String())
	}
	if got, want := stdout.String(), "from stdin\nsmoke\n"; got != want {
		t.Fatalf("exec printed %q, want %q (stderr %q)", got, want, stderr.String())
	}
	t.Logf("exec answered in %.2fs", time.Since(execStart).Seconds())

	// The pod's address, from this process.
	httpc := &http.Client{Transport: &http.Transport{DialContext: c.DialContext}, Timeout: time.Minute}
	defer httpc.CloseIdleConnections()
	resp, err := httpc.Get("http://" + net.JoinHostPort(ready.Status.PodIP, "8080") + "/")
	if err != nil {
		t.Fatalf("GET the pod's httpd: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), marker) {
		t.Fatalf("the pod's httpd answered %s %q", resp.Status, body)
	}
	t.Logf("pod %s reached at %s:8080 from the test process", pod.Name, ready.Status.PodIP)

	delStart := time.Now()
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	waitPodGone(ctx, t, c, pod.Name)
	t.Logf("pod gone %.1fs after delete", time.Since(delStart).Seconds())

	// A second pod, left running: Close must take it down too.
	pod2 := pod.DeepCopy()
	pod2.Name, pod2.ResourceVersion = "left-running", ""
	pod2.Spec.Containers[0].ReadinessProbe = nil
	if _, err := pods.Create(ctx, pod2, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	waitPod(ctx, t, c, pod2.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	shimSocks = append(shimSocks, shimSocketsOf(c.Dir)...)
	closeStart := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("closed in %.1fs", time.Since(closeStart).Seconds())
	checkNothingLeft(t, c, before, shimSocks)
}

// waitPod watches the pod until cond holds and returns it.
func waitPod(ctx context.Context, t *testing.T, c *Cluster, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ev, err := watchtools.UntilWithSync(ctx, podListWatch(c, name), &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		return ok && ev.Type != watch.Deleted && cond(p), nil
	})
	if err != nil {
		p, gerr := c.Client.CoreV1().Pods(metav1.NamespaceDefault).Get(context.WithoutCancel(ctx), name, metav1.GetOptions{})
		t.Fatalf("wait for pod %s: %v; the pod: %+v %v", name, err, podStatus(p), gerr)
	}
	return ev.Object.(*corev1.Pod)
}

// waitPodGone watches the pod until it no longer exists.
func waitPodGone(ctx context.Context, t *testing.T, c *Cluster, name string) {
	t.Helper()
	gone := func(store cache.Store) (bool, error) {
		_, exists, err := store.GetByKey(metav1.NamespaceDefault + "/" + name)
		return !exists, err
	}
	if _, err := watchtools.UntilWithSync(ctx, podListWatch(c, name), &corev1.Pod{}, gone, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Deleted, nil
	}); err != nil {
		t.Fatalf("wait for pod %s to go: %v", name, err)
	}
}

func podListWatch(c *Cluster, name string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.Client.CoreV1().RESTClient(), "pods", metav1.NamespaceDefault,
		fields.OneTermEqualSelector("metadata.name", name))
}

func podStatus(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

// hostState is what a cluster changes on the machine outside its own directories and must
// put back.
type hostState struct {
	sysctls map[string]string
	dirs    map[string]bool
}

// readHostState reads the machine's state before the cluster c changed it: the kernel
// settings as Up saved them once it had removed what earlier clusters left (which may
// include changed settings), and which of hostDirs existed before Start.
func readHostState(t *testing.T, c *Cluster, dirsBefore map[string]bool) hostState {
	t.Helper()
	b, err := os.ReadFile(c.l.path("sysctl.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := hostState{dirs: dirsBefore}
	if err := json.Unmarshal(b, &s.sysctls); err != nil {
		t.Fatal(err)
	}
	return s
}

// flexVolumeDir is where the kubelet and the controller manager would look for FlexVolume
// plugins, and make the directory, were they not told otherwise.
const flexVolumeDir = "/usr/libexec/kubernetes"

func existingHostDirs() map[string]bool {
	dirs := map[string]bool{}
	for _, d := range append(hostDirs, flexVolumeDir, hostPathPVDir) {
		_, err := os.Stat(d)
		dirs[d] = err == nil
	}
	return dirs
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			t.Fatal(err)
		}
		m[k] = strings.TrimSpace(string(b))
	}
	return m
}

// checkNothingLeft fails t if anything of the closed cluster c remains on the machine. It
// looks while holding the machine's cluster lock, which also shows that c released it: other
// test processes wait for that lock (opening its file), and one of them could otherwise bring
// its own cluster up, with the same host directories and settings, while this one looks.
func checkNothingLeft(t *testing.T, c *Cluster, before hostState, shimSocks []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := lockMachine(ctx)
	if err != nil {
		t.Fatalf("the closed cluster's lock: %v", err)
	}
	defer l.unlock()
	var left []string
	if pids := processesNaming(c.Dir + "/"); len(pids) > 0 {
		left = append(left, "processes naming the directory")
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		left = append(left, "the directory "+c.Dir)
	}
	if _, err := os.Stat(netnsPath(c.Netns)); !os.IsNotExist(err) {
		left = append(left, "the network namespace "+c.Netns)
	}
	if roots := cgroupRoots(c.Netns); len(roots) > 0 {
		left = append(left, "cgroups "+strings.Join(roots, " "))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(" "+c.Dir)) {
		left = append(left, "mounts under "+c.Dir)
	}
	results, _ := os.ReadDir(cniResults)
	for _, e := range results {
		if b, err := os.ReadFile(filepath.Join(cniResults, e.Name())); err == nil && bytes.Contains(b, []byte(c.Dir+"/")) {
			left = append(left, "CNI result "+e.Name())
		}
	}
	for _, sock := range append(shimSocks, devicePluginSocket) {
		if _, err := os.Lstat(sock); err == nil {
			left = append(left, "the socket "+sock)
		}
	}
	for _, sock := range append(shimSocks, devicePluginSocket) {
		if _, err := os.Lstat(sock); err == nil {
			left = append(left, "the socket "+sock)
		}
	}
	for _, d := range append(hostDirs, flexVolumeDir, hostPathPVDir) {
		if _, err := os.Stat(d); err == nil && !before.dirs[d] {
			left = append(left, "the directory "+d)
		}
	}
	links, _ := os.ReadDir(containerLogLinks)
	for _, e := range links {
		if target, err := os.Readlink(filepath.Join(containerLogLinks, e.Name())); err == nil && strings.HasPrefix(target, c.Dir+"/") {
			left = append(left, "log link "+e.Name())
		}
	}
	if now := readSysctls(t); !maps.Equal(now, before.sysctls) {
		left = append(left, "kernel settings changed: before "+formatMap(before.sysctls)+", now "+formatMap(now))
	}
	if len(left) > 0 {
		t.Errorf("the closed cluster left: %s", strings.Join(left, "; "))
	}
}

func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range kubeletSysctls {
		b.WriteString(k + "=" + m[k] + " ")
	}
	return strings.TrimSpace(b.String())
}
