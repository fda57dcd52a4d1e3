package deploy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// adminKey is the first admin's key, given to the replicas in the Secret agentd-admin.
const adminKey = "deploy-e2e-admin-key-0123456789"

// lease is the conversation lease of testdata/e2e (AGENTD_CONVERSATION_LEASE).
const lease = 3 * time.Second

// caCerts is where cmd/agentd-image takes the CA certificates from.
const caCerts = "/etc/ssl/certs/ca-certificates.crt"

// TestDeploy applies deploy/, through the test's overlay, to a real cluster: agentd's image
// as make image builds it and the sandboxes' image imported into the node (nothing pulled),
// PostgreSQL at the node's address in the cluster's network namespace, where the pods reach
// it, and a scripted model listening there too. Both replicas become ready under Pod
// Security's restricted level, with the Role deploy/ grants and nothing more, and the Service
// has both. Then a conversation runs through the public API, in a sandbox pod whose init
// container runs agentd's image, and one replica's stream carries what the other recorded;
// and the replica running a second conversation is killed, which the other continues.
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
	runtime, err := os.Stat(im.runtime)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Conversation", func(t *testing.T) { testConversation(ctx, t, c, a, b, runtime.Size()) })
	t.Run("Takeover", func(t *testing.T) { testTakeover(ctx, t, c, a, b) })
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
// sandbox's pod, started with agentd's image in its init container (which copied the
// runtime-only build into the pod), and finishes; a stream on the other replica, opened once
// it started, carries every event of its log in order.
func testConversation(ctx context.Context, t *testing.T, c *kubetest.Cluster, a, b *replica, runtimeSize int64) {
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
	// What it copied into the pod, and the sandbox runs, is the runtime-only build that
	// agentd's binary carries, not the whole binary.
	out, err := execIn(ctx, c, sandboxNamespace, pod.Name, "sandbox", "wc", "-c", "/.agentd/bin/agentd")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d /.agentd/bin/agentd\n", runtimeSize); out != want {
		t.Errorf("the runtime in the sandbox's pod: %q, want the runtime-only build's %q", out, want)
	}
}

// testTakeover: the replica that runs a conversation is killed with SIGKILL while a command
// of the agent runs in the sandbox. Once its lease lapses the surviving replica continues the
// conversation, in the same sandbox pod: it answers the cut-off call as a restart does and
// asks the model for the next step, which it asks once; the command ran once; the log has
// every event once, what the dead replica recorded first; a stream on the surviving replica,
// opened before the kill, carries all of it in order; and the Deployment starts a new
// replica, which reads the same once it can be scheduled.
//
// The kill is a SIGKILL of the replica's process, found by its container's cgroup, and
// then the deletion of its pod with no grace period, so that the kubelet does not restart
// the container in place (a replica that starts again frees its own earlier leases at once,
// which is not what is tested here) and the Deployment replaces the pod. Deleting the pod
// alone would not do: the kubelet gives even a deletion without grace period a two-second
// window of SIGTERM, in which agentd stops cleanly and hands its conversations over at once.
// SIGKILL is what an out-of-memory kill, a kernel panic or a lost node does to a replica.
func testTakeover(ctx context.Context, t *testing.T, c *kubetest.Cluster, a, b *replica) {
	ln, err := c.Listen("tcp", net.JoinHostPort(c.NodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		at   time.Time
		from string // the replica's pod address
	}
	var (
		mu    sync.Mutex
		steps []step
	)
	record := func(req llmtest.RecordedRequest) {
		host, _, _ := net.SplitHostPort(req.RemoteAddr)
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, step{time.Now(), host})
	}
	stepsSoFar := func() []step {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(steps)
	}
	// The command marks its start and end in the pod's own /tmp, readable (umask 022) by the
	// root of kubectl exec, which has no capability to read the sandbox user's private files.
	model := llmtest.NewOpenAIOn(t, ln,
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			record(req)
			return llmtest.Calls(llmtest.Call("terminal", `{"command":"umask 022; echo start >> /tmp/runs; sleep 8; echo end >> /tmp/runs"}`))
		}},
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			record(req)
			if last := req.Last(); last.Role != llm.RoleTool || !strings.Contains(last.Text(), "restart") {
				t.Errorf("after the takeover the model was sent %+v, want the cut-off call's error", last)
			}
			return llmtest.Text("All done.")
		}},
	)
	a.do(ctx, t, "POST", "/api/settings", map[string]any{"llm_model": "gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey}, nil)
	conv, sandboxID := a.startConversation(ctx, t, "Run the slow command.")

	waitFor(t, 2*time.Minute, "the first model call", func() (bool, string) { return len(stepsSoFar()) > 0, "none yet" })
	var holder, other *replica
	for _, r := range []*replica{a, b} {
		if r.pod.Status.PodIP == stepsSoFar()[0].from {
			holder = r
		} else {
			other = r
		}
	}
	if holder == nil || other == nil {
		t.Fatalf("the model was called from %s, which is neither replica", stepsSoFar()[0].from)
	}
	sse := other.followSSE(t, conv)
	sb := sandboxPod(ctx, t, c, sandboxID)
	waitFor(t, 2*time.Minute, "the command to start in the sandbox", func() (bool, string) {
		out, err := execIn(ctx, c, sandboxNamespace, sb.Name, "sandbox", "cat", "/tmp/runs")
		if err != nil {
			return false, err.Error()
		}
		return out == "start\n", out
	})
	before := other.conversationLog(ctx, t, conv)
	if slices.Contains(labels(before), "ObservationEvent:terminal") {
		t.Fatalf("the command finished before the kill: %s", strings.Join(labels(before), ","))
	}

	live, err := c.Client.CoreV1().Pods(namespace).Get(ctx, holder.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var containerID string
	for _, st := range live.Status.ContainerStatuses {
		if st.Name == "agentd" {
			containerID = st.ContainerID
		}
	}
	// The replica the Deployment starts in the dead one's place looks for lapsed leases as
	// soon as it starts, and would race the survivor, which is the one under test here:
	// nothing new is scheduled until the survivor has taken over.
	cordon(ctx, t, c, true)
	killedAt := time.Now()
	n := killContainer(t, containerID)
	deletePodNow(ctx, t, c, holder.pod.Name)
	t.Logf("killed %s (%d processes) with SIGKILL while it ran conversation %s, and deleted its pod", holder.pod.Name, n, conv)

	var after []logEvent
	waitFor(t, 3*time.Minute, "another replica to finish the conversation", func() (bool, string) {
		after = other.conversationLog(ctx, t, conv)
		return finished(after), strings.Join(labels(after), ",")
	})
	got := stepsSoFar()
	if len(got) != 2 || len(model.Requests()) != 2 {
		t.Fatalf("%d model calls, want 2: each step once", len(model.Requests()))
	}
	takeover := got[1].at.Sub(killedAt)
	t.Logf("takeover: %s asked the model for the next step %.2fs after %s was killed (lease %v); the conversation finished: %s",
		other.pod.Name, takeover.Seconds(), holder.pod.Name, lease, strings.Join(labels(after), ","))
	if got[1].from != other.pod.Status.PodIP {
		t.Errorf("the next step was asked from %s, not from the surviving replica %s (%s)", got[1].from, other.pod.Name, other.pod.Status.PodIP)
	}
	// The lease lapses at most a lease after the kill, and the others look for lapsed
	// leases every tenth of it; the rest is slack for a loaded machine.
	if limit := lease + 10*time.Second; takeover > limit {
		t.Errorf("the takeover took %v, more than %v", takeover, limit)
	}

	// Every event once; what the dead replica recorded is there as it was, first.
	seen := map[string]bool{}
	for _, ev := range after {
		if seen[ev.ID] {
			t.Errorf("event %s is in the log twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	if len(after) < len(before) || !slices.Equal(ids(after[:len(before)]), ids(before)) {
		t.Errorf("the log after the takeover does not begin with what was recorded before:\nbefore %v\nafter  %v", ids(before), ids(after))
	}
	var actions int
	for _, l := range labels(after) {
		if l == "ActionEvent:terminal" {
			actions++
		}
	}
	if actions != 1 {
		t.Errorf("%d terminal actions, want 1: %s", actions, strings.Join(labels(after), ","))
	}
	if !slices.ContainsFunc(after, func(ev logEvent) bool { return strings.Contains(string(ev.raw), "interrupted this tool call") }) {
		t.Errorf("no event answers the cut-off call: %s", strings.Join(labels(after), ","))
	}
	checkStream(t, "the SSE stream on "+other.pod.Name, sse, after)

	// The same sandbox pod, never restarted, where the command ran once, to its end.
	now := sandboxPod(ctx, t, c, sandboxID)
	if now.UID != sb.UID {
		t.Errorf("the sandbox's pod was replaced (uid %s, was %s)", now.UID, sb.UID)
	}
	for _, st := range now.Status.ContainerStatuses {
		if st.RestartCount != 0 || st.State.Running == nil {
			t.Errorf("the sandbox's container %s: %+v", st.Name, st)
		}
	}
	waitFor(t, time.Minute, "the command to end", func() (bool, string) {
		out, err := execIn(ctx, c, sandboxNamespace, sb.Name, "sandbox", "cat", "/tmp/runs")
		if err != nil {
			return false, err.Error()
		}
		if out != "start\n" && out != "start\nend\n" {
			t.Fatalf("the command's runs: %q, want it once", out)
		}
		return out == "start\nend\n", out
	})

	// The replica the Deployment starts instead reads the same log.
	cordon(ctx, t, c, false)
	pods := waitRollout(ctx, t, c, 5*time.Minute)
	for _, p := range pods {
		if p.Name == holder.pod.Name || p.Name == other.pod.Name {
			continue
		}
		fresh := newReplica(t, c, p, adminKey)
		if got := fresh.conversationLog(ctx, t, conv); !slices.Equal(ids(got), ids(after)) {
			t.Errorf("the new replica %s reads %v, want %v", p.Name, ids(got), ids(after))
		}
	}
}
