package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/ociimage"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
)

// Kubernetes runs are slower still; they have their own counts.
var (
	kubeStarts = flag.Int("kube-starts", 20, "kubernetes sandbox starts to time")
	kubeCycles = flag.Int("kube-cycles", 10, "kubernetes pause/resume cycles to time")
)

// The images of the kubernetes rows, imported into the test cluster's node: agentd's (the
// bench's binary, which the init container runs and copies into the pod) and the sandboxes'
// (the host's tools, as the docker rows').
const (
	kubeRuntimeImage = "localhost/agentd-bench/agentd:bench"
	kubeSandboxImage = "localhost/agentd-bench/sandbox:bench"
	kubeNamespace    = "agentd-bench"
)

// benchKubernetes measures the kubernetes backend on a real single-node cluster that it
// starts for the run (kubetest, the tests' cluster; the Kubernetes binaries must be built,
// `make kube`), through the whole server: a sandbox's start to RUNNING (cold: a new pod, its
// Secret, workspace claim and NetworkPolicy, and the runtime answering over TLS) beside a
// bare client-go create of the same pod and a watch until its container runs; pause (the pod
// removed, its removal awaited) and resume (a new pod, its runtime answering) beside the bare
// pod's deletion awaited by a watch and its creation again; the calls to the API server,
// counted on the backend's rest.Config, of a sandbox listing and of a start; and a start
// claimed from a warm pool of one (a server of its own) to RUNNING beside the same two.
func benchKubernetes(ctx context.Context, binary, tmp string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	if *kubeStarts < 1 || *kubeCycles < 1 {
		return nil, nil, errors.New("-kube-starts and -kube-cycles must be positive")
	}
	progress("kubernetes: starting the test cluster")
	c, err := kubetest.Up(ctx, kubetest.Options{})
	if errors.Is(err, kubetest.ErrUnavailable) {
		return nil, []string{"kubernetes rows skipped: " + err.Error()}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	if err := kubeImages(ctx, c, binary, tmp); err != nil {
		return nil, nil, err
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}

	var calls atomic.Int64
	cfg := rest.CopyConfig(c.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &calls} }
	log := benchLogger(logw)
	// serve starts a server on a backend of installation, in dataDir, with a warm pool of
	// pool sandboxes of the default spec.
	serve := func(cfg *rest.Config, installation, dataDir string, pool int) (*server, error) {
		b, err := kubernetes.New(kubernetes.Options{
			Config: cfg, Namespace: kubeNamespace, Installation: installation, RuntimeImage: kubeRuntimeImage,
			PullPolicy: "Never", DialContext: c.DialContext, StorageClass: kubetest.StorageClass, Logger: log,
			StreamTransport: func() (http.RoundTripper, spdy.Upgrader, error) { return c.StreamTransport() },
		})
		if err != nil {
			return nil, err
		}
		return startServerOn(ctx, kubeWithImage{b, kubeSandboxImage}, filepath.Join(tmp, dataDir), config.DatabaseSQLite, 1, log, "", pool,
			"--kubernetes-runtime-image", kubeRuntimeImage, "--kubernetes-namespace", kubeNamespace)
	}
	srv, err := serve(cfg, "bench", "kube-data", 0)
	if err != nil {
		return nil, nil, err
	}
	defer srv.close()

	// The warm pool's server: a pool of one of the default spec, on a backend of another
	// installation (the pools and orphans of each server are its own).
	psrv, err := serve(c.Config, "bench-pool", "kube-pool-data", 1)
	if err != nil {
		return nil, nil, err
	}
	// The pool is the installation's and outlives its server: what is left of it goes with
	// the cluster.
	defer psrv.close()

	// The bare pod is the pod of a sandbox kept for the run, under another name and without
	// agentd's labels: the same images, init step, volumes (that sandbox's Secret and
	// workspace claim) and limits.
	keep, done, err := srv.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	bare, err := barePod(ctx, c.Client, keep.ID)
	if err != nil {
		return nil, nil, err
	}

	progress("kubernetes: timing %d sandbox starts", *kubeStarts)
	var starts, bares, claims []time.Duration
	for i := range warmups + *kubeStarts {
		rawStart, err := timeBarePodStart(ctx, c.Client, bare)
		if err != nil {
			return nil, nil, err
		}
		if err := deleteBarePod(ctx, c.Client, bare.Name); err != nil {
			return nil, nil, err
		}
		start, err := srv.timeStart(ctx)
		if err != nil {
			return nil, nil, err
		}
		// The pool's refill (a pod's start) is awaited untimed, so that it runs beside no
		// other timing.
		claim, err := psrv.timeClaim(ctx)
		if err == nil {
			err = psrv.waitPool(ctx, 1)
		}
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			starts, bares, claims = append(starts, start), append(bares, rawStart), append(claims, claim)
		}
	}
	// The calls of one start alone, the deletion apart.
	before := calls.Load()
	sb, err := srv.app.Sandboxes.Start(ctx, srv.ownerID, "")
	if err == nil {
		_, err = srv.app.Sandboxes.WaitRunning(ctx, srv.ownerID, sb.ID)
	}
	startCalls := calls.Load() - before
	if sb.ID != "" {
		defer srv.app.Sandboxes.Delete(context.WithoutCancel(ctx), srv.ownerID, sb.ID)
	}
	if err != nil {
		return nil, nil, err
	}

	before = calls.Load()
	const listings = 100
	for range listings {
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := srv.call(ctx, "GET", "/api/v1/sandboxes/search?limit=100", nil, &page); err != nil {
			return nil, nil, err
		}
		if len(page.Items) < 2 {
			return nil, nil, fmt.Errorf("the sandbox listing has %d sandboxes, want the bench's 2", len(page.Items))
		}
	}
	listCalls := float64(calls.Load()-before) / listings

	progress("kubernetes: timing %d pause/resume cycles", *kubeCycles)
	svc := srv.app.Sandboxes
	timed := func(f func() error) (time.Duration, error) {
		t0 := time.Now()
		err := f()
		return time.Since(t0), err
	}
	var pauses, resumes, rawPauses, rawResumes []time.Duration
	for i := range warmups + *kubeCycles {
		if _, err := timeBarePodStart(ctx, c.Client, bare); err != nil {
			return nil, nil, err
		}
		rawPause, err := timed(func() error { return deleteBarePod(ctx, c.Client, bare.Name) })
		if err != nil {
			return nil, nil, err
		}
		rawResume, err := timeBarePodStart(ctx, c.Client, bare)
		if err != nil {
			return nil, nil, err
		}
		if err := deleteBarePod(ctx, c.Client, bare.Name); err != nil {
			return nil, nil, err
		}
		pause, err := timed(func() error { return svc.Pause(ctx, srv.ownerID, sb.ID) })
		if err != nil {
			return nil, nil, err
		}
		resume, err := timed(func() error { return svc.Resume(ctx, srv.ownerID, sb.ID) })
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			pauses, resumes = append(pauses, pause), append(resumes, resume)
			rawPauses, rawResumes = append(rawPauses, rawPause), append(rawResumes, rawResume)
		}
	}

	const what, base = "sandbox start to RUNNING, cold (kubernetes backend)", "client-go create of the same pod, watched until its container runs"
	const claimed = "sandbox start to RUNNING claimed from a warm pool (kubernetes backend)"
	rows := []row{
		timeRow(what+", p50", 50, starts, bares, base),
		timeRow(what+", p99", 99, starts, bares, base),
		timeRow(claimed+", p50", 50, claims, bares, base),
		timeRow(claimed+", p99", 99, claims, bares, base),
		timeRow(claimed+", p50", 50, claims, starts, "a cold start of the same spec"),
		timeRow(claimed+", p99", 99, claims, starts, "a cold start of the same spec"),
		timeRow("pause: the pod removed (kubernetes backend), p50", 50, pauses, rawPauses, "client-go delete of the bare pod, watched until it is gone"),
		timeRow("resume, runtime answers again (kubernetes backend), p50", 50, resumes, rawResumes, "client-go create of the bare pod, watched until its container runs"),
		{figure: "API server calls per sandbox listing (kubernetes backend)", agentd: listCalls, primitive: 1, unit: unitCount,
			baseline: "one labelled list of the Secrets"},
		{figure: "API server calls per sandbox start (kubernetes backend)", agentd: float64(startCalls), primitive: 2, unit: unitCount,
			baseline: "a bare pod's create and its watch"},
	}
	return rows, []string{fmt.Sprintf(
		"kubernetes rows: %d starts and %d pause/resume cycles on a single-node Kubernetes %s cluster on this machine (etcd, API server, scheduler, controller manager and kubelet over containerd, all sharing its CPUs); "+
			"a start also creates the sandbox's Secret, workspace claim (hostPath) and NetworkPolicy, and waits for the runtime to answer over TLS; a pause records itself in the Secret before it removes the pod; "+
			"calls are counted on the backend's rest.Config (its informers' list and watch are made once, at its first read). "+
			"A claim (a server of its own with a pool of one) lists the pool, records the sandbox, patches the member's Secret and delivers the key to its runtime.",
		*kubeStarts, *kubeCycles, kubetest.Version), goalNote("kubernetes warm claim", percentile(claims, 50), poolKubeGoal)}, nil
}

// poolKubeGoal is the target for a start claimed from the kubernetes backend's warm
// pool.
const poolKubeGoal = 300 * time.Millisecond

// countingTransport counts the requests made through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// kubeImages writes the two images and imports them into the cluster's node.
func kubeImages(ctx context.Context, c *kubetest.Cluster, binary, tmp string) error {
	dir := filepath.Join(tmp, "kube-images")
	root := filepath.Join(dir, "agentd-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "agentd"), data, 0o755); err != nil {
		return err
	}
	rootfs, err := dockertest.RootfsTar(dockertest.ImageTools)
	if err != nil {
		return err
	}
	sandboxLayer, err := ociimage.Tar(bytes.NewReader(rootfs))
	if err != nil {
		return err
	}
	agentdLayer, err := ociimage.Dir(root)
	if err != nil {
		return err
	}
	for _, img := range []ociimage.Image{
		{Name: kubeRuntimeImage, Layers: []ociimage.Layer{agentdLayer}, Entrypoint: []string{"/agentd"}},
		{Name: kubeSandboxImage, Layers: []ociimage.Layer{sandboxLayer}, Env: []string{"PATH=" + dockertest.ImagePath}},
	} {
		tarball := filepath.Join(dir, filepath.Base(img.Name)+".tar")
		if _, err := ociimage.Write(tarball, img); err != nil {
			return err
		}
		if err := c.ImportImage(ctx, tarball); err != nil {
			return err
		}
	}
	return nil
}

// barePod is the pod of sandbox id as the bench creates it bare: its spec, another name, no
// labels (the backend's informers and the NetworkPolicy select none of it).
func barePod(ctx context.Context, cs k8s.Interface, id string) (*corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(kubeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "agentd.dev/sandbox=" + id})
	if err != nil {
		return nil, err
	}
	if len(pods.Items) != 1 {
		return nil, fmt.Errorf("sandbox %s has %d pods", id, len(pods.Items))
	}
	p := pods.Items[0]
	spec := *p.Spec.DeepCopy()
	spec.NodeName = "" // scheduled, as the sandbox's
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bench-bare", Namespace: kubeNamespace}, Spec: spec}, nil
}

// timeBarePodStart creates pod and watches it until its last container runs, and returns
// how long that took.
func timeBarePodStart(ctx context.Context, cs k8s.Interface, pod *corev1.Pod) (time.Duration, error) {
	t0 := time.Now()
	created, err := cs.CoreV1().Pods(kubeNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("bare pod create: %w", err)
	}
	err = watchPod(ctx, cs, created, func(p *corev1.Pod) (bool, error) {
		if p == nil {
			return false, errors.New("the bare pod was removed")
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("the bare pod ended: %s %s", p.Status.Reason, p.Status.Message)
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == pod.Spec.Containers[0].Name && s.State.Running != nil {
				return true, nil
			}
		}
		return false, nil
	})
	return time.Since(t0), err
}

// deleteBarePod deletes the bare pod with the grace period a pause gives and watches it
// until it is gone.
func deleteBarePod(ctx context.Context, cs k8s.Interface, name string) error {
	p, err := cs.CoreV1().Pods(kubeNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	grace := int64(1)
	if err := cs.CoreV1().Pods(kubeNamespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return fmt.Errorf("bare pod delete: %w", err)
	}
	return watchPod(ctx, cs, p, func(p *corev1.Pod) (bool, error) { return p == nil, nil })
}

// watchPod watches pod from its resource version until done says so of it (nil: deleted).
func watchPod(ctx context.Context, cs k8s.Interface, pod *corev1.Pod, done func(*corev1.Pod) (bool, error)) error {
	w, err := cs.CoreV1().Pods(kubeNamespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("the watch of the bare pod ended")
			}
			var p *corev1.Pod
			switch ev.Type {
			case watch.Added, watch.Modified:
				p, _ = ev.Object.(*corev1.Pod)
			case watch.Deleted:
			case watch.Error:
				return fmt.Errorf("watch the bare pod: %v", apierrors.FromObject(ev.Object))
			default:
				continue
			}
			if ok, err := done(p); ok || err != nil {
				return err
			}
		}
	}
}

// kubeWithImage gives the server's specs that name no image (the built-in default spec)
// the bench's sandbox image.
type kubeWithImage struct {
	*kubernetes.Backend
	image string
}

func (w kubeWithImage) spec(spec sandbox.Spec) sandbox.Spec {
	if spec.Image == "" {
		spec.Image = w.image
	}
	return spec
}

// Start implements sandbox.Backend.
func (w kubeWithImage) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	req.Spec = w.spec(req.Spec)
	return w.Backend.Start(ctx, req)
}

// Claim implements sandbox.SharedPools.
func (w kubeWithImage) Claim(ctx context.Context, m sandbox.PoolMember, req sandbox.ClaimRequest) error {
	req.Spec = w.spec(req.Spec)
	return w.Backend.Claim(ctx, m, req)
}

// CheckSpec implements sandbox.SpecChecker.
func (w kubeWithImage) CheckSpec(spec sandbox.Spec) error { return w.Backend.CheckSpec(w.spec(spec)) }
