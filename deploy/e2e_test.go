package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// adminKey is the first admin's key, given to the replicas in the Secret agentd-admin.
const adminKey = "deploy-e2e-admin-key-0123456789"

// caCerts is where cmd/agentd-image takes the CA certificates from.
const caCerts = "/etc/ssl/certs/ca-certificates.crt"

// TestDeploy applies deploy/, through the test's overlay, to a real cluster: agentd's image
// as make image builds it and the sandboxes' image imported into the node (nothing pulled),
// PostgreSQL at the node's address in the cluster's network namespace, where the pods reach
// it, and a scripted model listening there too. Both replicas become ready under Pod
// Security's restricted level, with the Role deploy/ grants and nothing more, and the Service
// has both. Then a conversation runs through the public API, in a sandbox pod whose init
// container runs agentd's image, and one replica's stream carries what the other recorded.
func TestDeploy(t *testing.T) {
	if _, err := os.Stat(caCerts); err != nil {
		pgtest.Unavailable(t, "agentd's image needs the CA certificates of Debian's ca-certificates package (scripts/deps.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	// The builds run while the cluster starts (or waits for another test's to close).
	dir := t.TempDir()
	var (
		im        images
		buildErr  error
		buildDone = make(chan struct{})
		begin     = time.Now()
	)
	go func() {
		defer close(buildDone)
		im, buildErr = buildImages(ctx, dir)
	}()
	t.Cleanup(func() {
		cancel()
		<-buildDone
	})
	c := kubetest.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, c)
		}
	})
	<-buildDone
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	for _, tarball := range []string{im.agentd, im.sandbox} {
		if err := c.ImportImage(ctx, tarball); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cluster up and images built and imported in %.1fs", time.Since(begin).Seconds())

	pg, err := pgtest.StartServer(ctx, pgtest.ServerOptions{Netns: c.Netns, Listen: c.NodeIP})
	if err != nil {
		pgtest.Unavailable(t, "PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	conn, err := pgx.Connect(ctx, pg.SocketURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE agentd"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	dbURL, err := url.Parse(pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	dbURL.Path = "/agentd"

	keyring := filepath.Join(dir, "keyring.json")
	if out, err := runAgentd(ctx, im.binary, "keyring", "create", keyring); err != nil {
		t.Fatalf("agentd keyring create: %v\n%s", err, out)
	}
	keyringData, err := os.ReadFile(keyring)
	if err != nil {
		t.Fatal(err)
	}

	// The namespace first, for the Secrets, as docs/kubernetes.md does it; apply labels it.
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createSecret(ctx, t, c, "agentd-database", map[string][]byte{"url": []byte(dbURL.String())})
	createSecret(ctx, t, c, "agentd-keyring", map[string][]byte{"keyring.json": keyringData})
	createSecret(ctx, t, c, "agentd-admin", map[string][]byte{"key": []byte(adminKey)})
	applied := time.Now()
	apply(ctx, t, c, overlay(t))
	pods := waitRollout(ctx, t, c, 5*time.Minute)
	t.Logf("2 replicas ready %.1fs after apply: %s, %s", time.Since(applied).Seconds(), pods[0].Name, pods[1].Name)
	checkEndpoints(ctx, t, c, pods)

	a, b := newReplica(t, c, pods[0], adminKey), newReplica(t, c, pods[1], adminKey)
	t.Run("Conversation", func(t *testing.T) { testConversation(ctx, t, c, a, b) })
}

// checkEndpoints: the Service routes to every ready replica (the test cluster runs no
// kube-proxy, so the test reaches the pods themselves; the Service's endpoints say where
// its address would lead).
func checkEndpoints(ctx context.Context, t *testing.T, c *kubetest.Cluster, pods []corev1.Pod) {
	t.Helper()
	var want []string
	for _, p := range pods {
		want = append(want, p.Status.PodIP)
	}
	slices.Sort(want)
	waitFor(t, time.Minute, "the Service's endpoints", func() (bool, string) {
		list, err := c.Client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + deployment})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want), strings.Join(got, ",")
	})
}

// testConversation: a conversation created through one replica runs its command in its
// sandbox's pod, started with agentd's image in its init container, and finishes; a stream
// on the other replica, opened once it started, carries every event of its log in order.
func testConversation(ctx context.Context, t *testing.T, c *kubetest.Cluster, a, b *replica) {
	ln, err := c.Listen("tcp", net.JoinHostPort(c.NodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewOpenAIOn(t, ln,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo hello from $HOSTNAME"}`)),
		llmtest.Text("Said hello."),
	)
	a.do(ctx, t, "POST", "/api/settings", map[string]any{"llm_model": "gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey}, nil)
	start := time.Now()
	conv, sandboxID := a.startConversation(ctx, t, "Say hello from the sandbox.")
	t.Logf("conversation %s ready in sandbox %s after %.1fs", conv, sandboxID, time.Since(start).Seconds())
	sse := b.followSSE(t, conv)
	var log []logEvent
	waitFor(t, 3*time.Minute, "the agent to finish", func() (bool, string) {
		log = b.conversationLog(ctx, t, conv)
		return finished(log), strings.Join(labels(log), ",")
	})
	t.Logf("finished %.1fs after the start: %s", time.Since(start).Seconds(), strings.Join(labels(log), ","))

	hello := "hello from agentd-sb-" + sandboxID
	if !slices.ContainsFunc(log, func(ev logEvent) bool {
		return ev.Kind == "ObservationEvent" && strings.Contains(string(ev.raw), hello)
	}) {
		t.Errorf("no observation says %q: the command did not run in the sandbox's pod", hello)
	}
	checkStream(t, "the SSE stream on "+b.pod.Name, sse, log)
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	pod := sandboxPod(ctx, t, c, sandboxID)
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != agentdImage {
		t.Errorf("the sandbox's init container: %+v, want agentd's image %s", pod.Spec.InitContainers, agentdImage)
	}
	if st := pod.Status.InitContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Errorf("the sandbox's init container (agentd sandbox-init): %+v", st)
	}
}
