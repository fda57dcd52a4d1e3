package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrUnavailable is wrapped by Up when this machine cannot run a cluster: not root, a
// Debian package missing, the Kubernetes binaries not built. The error says what to do.
var ErrUnavailable = errors.New("no Kubernetes cluster for the tests")

// dirPrefix starts the name of every cluster's directory (under os.TempDir()), network
// namespace and cgroup, which is how Up recognises what a killed test process left.
const dirPrefix = "agentd-kube-"

// Options configure Up.
type Options struct {
	// BinDir holds the binaries scripts/kube-build.sh builds; DefaultBinDir() when empty.
	BinDir string
}

// Cluster is a running single-node cluster. Its API server, node and pods are reachable
// from the cluster's network namespace only; Config and DialContext reach them from this
// process.
type Cluster struct {
	// Config is cluster-admin's. Its Dial opens connections inside the cluster's network
	// namespace (DialContext), so it works from this process as it is; Host is the API
	// server's address there.
	Config *rest.Config
	// Client is a clientset of Config.
	Client kubernetes.Interface
	// NodeIP is the node's address (NodeIP), where the kubelet and API server listen.
	NodeIP string
	// Netns is the name of the cluster's network namespace (in /run/netns); every component
	// runs in it, and the pods' bridge is in it.
	Netns string
	// Dir is the cluster's directory: configuration, state and each component's log, in
	// Dir/logs/<component>.log. Close removes it.
	Dir string
	// Milestones says how long the start took to reach each step, for logs.
	Milestones []string

	l       layout
	lock    *machineLock
	procs   []*process
	started time.Time

	mu      sync.Mutex // guards netnsFD against Close
	netnsFD int        // the namespace, for DialContext; -1 once closed

	closeOnce sync.Once
	closed    bool
	closeErr  error
}

// Up starts a cluster and returns once its node is Ready and the default namespace's
// service account exists (the API server refuses pods before that). It first waits for any
// other cluster of the machine to be closed and removes what dead ones left. ctx bounds
// the whole start; on failure Up removes what it made and the error ends with the logs of
// the component at fault.
func Up(ctx context.Context, opts Options) (_ *Cluster, err error) {
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = DefaultBinDir(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	if err := checkPrerequisites(binDir); err != nil {
		return nil, err
	}
	lock, err := lockMachine(ctx)
	if err != nil {
		return nil, err
	}
	// Every cluster of the machine holds the lock, so whatever is left now is dead.
	if err := removeStale(); err != nil {
		lock.unlock()
		return nil, fmt.Errorf("remove what an earlier cluster left: %w", err)
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	c := &Cluster{
		NodeIP:  NodeIP,
		Netns:   filepath.Base(dir),
		Dir:     dir,
		l:       layout{dir},
		lock:    lock,
		netnsFD: -1,
		started: time.Now(),
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if err := c.up(ctx, binDir); err != nil {
		return nil, fmt.Errorf("start a Kubernetes %s cluster in %s: %w", Version, dir, err)
	}
	return c, nil
}

func (c *Cluster) up(ctx context.Context, binDir string) error {
	// Saved before anything can change them, for Close, or for the next Up should this
	// process be killed.
	if err := saveSysctls(c.l.path("sysctl.json")); err != nil {
		return err
	}
	if err := addNetns(c.Netns); err != nil {
		return err
	}
	fd, err := openNetns(c.Netns)
	if err != nil {
		return err
	}
	c.netnsFD = fd
	if err := createCgroupRoot(c.Netns); err != nil {
		return err
	}
	p, err := newPKI(time.Now())
	if err != nil {
		return err
	}
	admin, err := writePKI(c.l, p)
	if err != nil {
		return err
	}
	if err := writeConfigs(c.l, c.Netns); err != nil {
		return err
	}
	if err := os.MkdirAll(c.l.path("images"), 0o755); err != nil {
		return err
	}
	images, err := writeBaseImages(c.l.path("images"), binDir)
	if err != nil {
		return err
	}

	c.Config = &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", APIServerPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: admin.cert,
			KeyData:  admin.key,
		},
		Dial: c.DialContext,
		// Tests create and watch in bursts; the default 5 requests a second would pace them.
		QPS:   100,
		Burst: 200,
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}

	args := componentArgs(c.l, binDir)
	for _, name := range []string{"etcd", "containerd", "kube-apiserver"} {
		if err := c.start(name, args[name]); err != nil {
			return err
		}
	}
	if err := c.poll(ctx, "containerd's socket", func(context.Context) error {
		conn, err := net.Dial("unix", c.l.containerdSocket())
		if err == nil {
			conn.Close()
		}
		return err
	}); err != nil {
		return err
	}
	for _, img := range images {
		if err := c.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	c.milestone("images imported")
	// They wait for the API server by themselves: the controller manager for its /healthz,
	// which passes once the bootstrap roles it needs exist.
	for _, name := range []string{"kubelet", "kube-controller-manager", "kube-scheduler"} {
		if err := c.start(name, args[name]); err != nil {
			return err
		}
	}
	if err := c.poll(ctx, "the API server's /readyz", func(ctx context.Context) error {
		_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	if err := c.poll(ctx, "node "+NodeName+" Ready", func(ctx context.Context) error {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node Ready is %s: %s", cond.Status, cond.Message)
			}
		}
		return errors.New("node has no Ready condition yet")
	}); err != nil {
		return err
	}
	if err := c.poll(ctx, "the default service account", func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	return c.poll(ctx, "the storage class", func(ctx context.Context) error {
		_, err := c.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{
				Name:        StorageClass,
				Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
			},
			Provisioner: "kubernetes.io/host-path",
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// start starts a component in the cluster's network namespace.
func (c *Cluster) start(name string, args []string) error {
	p, err := startProcess(name, netnsPath(c.Netns), c.l.log(name), args)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// poll calls check until it returns nil, and fails when ctx ends first (with check's last
// error) or when a component exits (with its log).
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) error) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			c.milestone(what)
			return nil
		}
		for _, p := range c.procs {
			if perr := p.exitError(); perr != nil {
				return fmt.Errorf("wait for %s: %w", what, perr)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)%s", what, context.Cause(ctx), err, c.logTails(1500))
		case <-time.After(delay):
		}
	}
}

func (c *Cluster) milestone(what string) {
	c.Milestones = append(c.Milestones, fmt.Sprintf("%s at %.1fs", what, time.Since(c.started).Seconds()))
}

// logTails returns the end of every component's log, for an error that cannot tell which
// component is at fault.
func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "\n--- %s (%s):\n%s", p.name, p.logPath, p.logTail(n))
	}
	return b.String()
}

// ImportImage imports an image tarball (docker save's or an OCI layout's, such as
// internal/ociimage writes) into the node's containerd, where pods with imagePullPolicy: Never
// find it under its name.
func (c *Cluster) ImportImage(ctx context.Context, tarball string) error {
	if _, err := c.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("import %s: %w", tarball, err)
	}
	return nil
}

// ctr runs Debian's containerd client against the cluster's containerd, in the namespace
// the kubelet's containers live in.
func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.l.containerdSocket(), "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
