package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// testInstallation labels the tests' sandboxes.
const testInstallation = "agentd-test"

// newBackend returns a backend on the shared cluster, closed at cleanup; mod changes its
// options first.
func newBackend(t *testing.T, mod func(*Options)) *Backend {
	t.Helper()
	c := needCluster(t)
	opts := Options{
		Config:       c.Config,
		Namespace:    testNamespace,
		Installation: testInstallation,
		RuntimeImage: runtimeImage,
		PullPolicy:   "Never",
		DialContext:  c.DialContext,
		StreamTransport: func() (http.RoundTripper, spdy.Upgrader, error) {
			return c.StreamTransport()
		},
		StorageClass: kubetest.StorageClass,
	}
	if mod != nil {
		mod(&opts)
	}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// testSpec runs the runtime in the test image.
func testSpec() sandbox.Spec {
	spec := sandboxtest.RuntimeSpec("kubernetes-test")
	spec.Image = sandboxImage
	spec.WorkingDir = "/workspace"
	return spec
}

func TestConformance(t *testing.T) {
	c := needCluster(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newBackend(t, nil) }, sandboxtest.Options{
		Spec: testSpec(),
		Unsupported: []sandboxtest.SpecChange{
			{Name: "Rootfs", Apply: func(s *sandbox.Spec) { s.Rootfs = "/" }},
			{Name: "NetworkHost", Apply: func(s *sandbox.Spec) { s.Network = sandbox.NetworkHost }},
			{Name: "NoImage", Apply: func(s *sandbox.Spec) { s.Image = "" }},
		},
		Leftovers: func(inst sandbox.Instance) []string { return leftovers(t, c, inst.ID) },
		// Nothing is pulled: a start whose image is not on the node fails once the Secret,
		// the claim and the pod exist, and must remove them.
		StartFailure: sandboxtest.StartFailure{
			Apply: func(s *sandbox.Spec) { s.Image = "localhost/agentd-test/missing:none" },
			Cause: "ErrImageNeverPull",
		},
		Binary:    "agentd",
		MCPServer: testMCPServer,
		Env: func(sandbox.Instance) map[string]string {
			return map[string]string{"PATH": dockertest.ImagePath, "TERM": "xterm-256color", "HOME": defaultHome}
		},
		IsolatesFilesystem: true,
		IsolatesSandboxes:  true,
		IsolatesNetwork:    true,
		LimitsMemory:       true,
		Confines:           true,
		AgentdPath:         binaryInPod,
		DefaultLimits:      defaultLimits(t),
		Netns:              "/run/netns/" + c.Netns,
		KnownEscapes: map[string]string{
			"DefaultPIDs": "a pod spec has no limit on processes: the kubelet's podPidsLimit bounds every pod of a node alike (see Capabilities)",
		},
	})
}

// defaultLimits are the limits of the default spec of a server with the default
// configuration.
func defaultLimits(t *testing.T) sandbox.Limits {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return app.Specs(cfg)[0].Limits
}

// leftovers lists what is left in the cluster of sandbox id: its objects, and the volume its
// claim had, which the cluster removes after the claim (it is waited for).
func leftovers(t *testing.T, c *kubetest.Cluster, id string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var left []string
	sel := metav1.ListOptions{LabelSelector: labelSandbox + "=" + id}
	pods, err := c.Client.CoreV1().Pods(testNamespace).List(ctx, sel)
	if err != nil {
		return []string{err.Error()}
	}
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Name)
	}
	secrets, err := c.Client.CoreV1().Secrets(testNamespace).List(ctx, sel)
	if err != nil {
		return []string{err.Error()}
	}
	for _, s := range secrets.Items {
		left = append(left, "secret "+s.Name)
	}
	claims, err := c.Client.CoreV1().PersistentVolumeClaims(testNamespace).List(ctx, sel)
	if err != nil {
		return []string{err.Error()}
	}
	for _, s := range claims.Items {
		left = append(left, "claim "+s.Name)
	}
	nps, err := c.Client.NetworkingV1().NetworkPolicies(testNamespace).List(ctx, sel)
	if err != nil {
		return []string{err.Error()}
	}
	for _, s := range nps.Items {
		left = append(left, "network policy "+s.Name)
	}
	for {
		pvs, err := c.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return append(left, err.Error())
		}
		var bound []string
		for _, pv := range pvs.Items {
			if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == testNamespace && ref.Name == claimName(id) {
				bound = append(bound, fmt.Sprintf("volume %s (%s)", pv.Name, pv.Status.Phase))
			}
		}
		if len(bound) == 0 {
			return left
		}
		select {
		case <-ctx.Done():
			return append(left, bound...)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestCheckSpec: what a pod cannot give is refused with reasons, before anything is made.
func TestCheckSpec(t *testing.T) {
	b := &Backend{}
	for _, tt := range []struct {
		name   string
		change func(*sandbox.Spec)
		want   string
	}{
		{"rootfs", func(s *sandbox.Spec) { s.Rootfs = "/srv/rootfs" }, "root file system"},
		{"host network", func(s *sandbox.Spec) { s.Network = sandbox.NetworkHost }, `network "host"`},
		{"no image", func(s *sandbox.Spec) { s.Image = "" }, "without an image"},
	} {
		spec := testSpec()
		tt.change(&spec)
		err := b.CheckSpec(spec)
		var ue *sandbox.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an *UnsupportedError naming %q", tt.name, err, tt.want)
		}
	}
	for _, network := range []string{"", sandbox.NetworkEgress, sandbox.NetworkNone} {
		spec := testSpec()
		spec.Network = network
		if err := b.CheckSpec(spec); err != nil {
			t.Errorf("network %q: %v", network, err)
		}
	}
}

// TestLabelsAndList: every object of a sandbox carries its id, its owner and the
// installation; List finds this installation's sandboxes, paused ones too, and not another
// installation's.
func TestLabelsAndList(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, nil)
	other := newBackend(t, func(o *Options) { o.Installation = "another" })
	ctx := context.Background()
	owner := "user@example.com" // no label value: its digest labels the objects
	mine := startSandbox(t, b, owner, testSpec())
	theirs := startSandbox(t, other, "someone", testSpec())

	var objs []metav1.Object
	if p, err := c.Client.CoreV1().Pods(testNamespace).Get(ctx, objectName(mine.ID), metav1.GetOptions{}); err == nil {
		objs = append(objs, p)
	} else {
		t.Fatal(err)
	}
	if s, err := c.Client.CoreV1().Secrets(testNamespace).Get(ctx, objectName(mine.ID), metav1.GetOptions{}); err == nil {
		objs = append(objs, s)
	} else {
		t.Fatal(err)
	}
	if pvc, err := c.Client.CoreV1().PersistentVolumeClaims(testNamespace).Get(ctx, claimName(mine.ID), metav1.GetOptions{}); err == nil {
		objs = append(objs, pvc)
	} else {
		t.Fatal(err)
	}
	if np, err := c.Client.NetworkingV1().NetworkPolicies(testNamespace).Get(ctx, objectName(mine.ID), metav1.GetOptions{}); err == nil {
		objs = append(objs, np)
	} else {
		t.Fatal(err)
	}
	for _, o := range objs {
		l := o.GetLabels()
		if l[labelSandbox] != mine.ID || l[labelInstallation] != testInstallation || l[labelManagedBy] != managedBy ||
			l[labelOwner] != ownerLabel(owner) || !strings.HasPrefix(l[labelOwner], "sha256-") || o.GetAnnotations()[annotationOwner] != owner {
			t.Errorf("%s: labels %v, annotations %v", o.GetName(), l, o.GetAnnotations())
		}
	}

	if err := b.Pause(ctx, mine); err != nil {
		t.Fatal(err)
	}
	ids := func(b *Backend) []string {
		insts, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range insts {
			out = append(out, i.ID)
		}
		return out
	}
	if got := ids(b); len(got) != 1 || got[0] != mine.ID {
		t.Errorf("List = %v, want the paused %s alone", got, mine.ID)
	}
	if got := ids(other); len(got) != 1 || got[0] != theirs.ID {
		t.Errorf("the other installation's List = %v, want %s alone", got, theirs.ID)
	}
}

// startSandbox starts a sandbox and destroys it at cleanup.
func startSandbox(t *testing.T, b *Backend, owner string, spec sandbox.Spec) sandbox.Instance {
	t.Helper()
	id := sandboxtest.NewID()
	t.Cleanup(func() {
		if err := b.Destroy(context.Background(), sandbox.Instance{ID: id}); err != nil {
			t.Errorf("destroy %s: %v", id, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inst, err := b.Start(ctx, sandbox.StartRequest{ID: id, OwnerID: owner, Spec: spec, SessionKey: sandboxtest.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestCheck: the check passes with the cluster's administrator, fails naming the namespace
// when it does not exist, and names what is missing for an identity bound to nothing.
func TestCheck(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	if err := newBackend(t, nil).Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	err := newBackend(t, func(o *Options) { o.Namespace = "no-such-namespace" }).Check(ctx)
	var ce *sandbox.CheckError
	if !errors.As(err, &ce) || !strings.Contains(ce.ClientMessage(), `"no-such-namespace" does not exist`) {
		t.Fatalf("check of a missing namespace: %v", err)
	}
	// An identity bound to nothing: a service account's token.
	sa, err := c.Client.CoreV1().ServiceAccounts(testNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "nobody-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().ServiceAccounts(testNamespace).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
	})
	tok, err := c.Client.CoreV1().ServiceAccounts(testNamespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = newBackend(t, func(o *Options) {
		cfg := rest.AnonymousClientConfig(c.Config)
		cfg.BearerToken = tok.Status.Token
		o.Config = cfg
	}).Check(ctx)
	if !errors.As(err, &ce) || !strings.Contains(ce.ClientMessage(), "may not create pods") || !strings.Contains(ce.ClientMessage(), "create pods/portforward") ||
		!strings.Contains(ce.ClientMessage(), "watch pods") || !strings.Contains(ce.ClientMessage(), "patch secrets") {
		t.Fatalf("check without permissions: %v", err)
	}
}
