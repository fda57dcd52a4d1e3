package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// Addresses the network test adds to the cluster's network namespace, where pods reach them
// through their gateway: one standing for the internet (TEST-NET-2, outside every denied
// range) and the metadata address clouds serve.
const (
	internetAddr = "198.51.100.7"
	metadataAddr = "169.254.169.254"
)

// TestNetwork: from a sandbox with network egress, a server on the internet's side answers,
// and nothing of the cluster does: not the node (a server on its address, the API server),
// not another pod, not the metadata address. With network none, not even the internet's.
func TestNetwork(t *testing.T) {
	c := needCluster(t)
	for _, a := range []string{internetAddr, metadataAddr} {
		addAddr(t, c, a)
	}
	internet := serveIn(t, c, internetAddr)
	metadata := serveIn(t, c, metadataAddr)
	node := serveIn(t, c, kubetest.NodeIP)
	b := newBackend(t, nil)

	other := startSandbox(t, b, "owner", testSpec())
	otherPod, err := c.Client.CoreV1().Pods(testNamespace).Get(context.Background(), objectName(other.ID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closedTargets := []string{
		node, metadata,
		net.JoinHostPort(kubetest.NodeIP, strconv.Itoa(kubetest.APIServerPort)),
		net.JoinHostPort(otherPod.Status.PodIP, strconv.Itoa(runtimePort)),
	}

	for _, tt := range []struct {
		network  string
		internet bool
	}{{sandbox.NetworkEgress, true}, {sandbox.NetworkNone, false}} {
		t.Run(tt.network, func(t *testing.T) {
			spec := testSpec()
			spec.Network = tt.network
			key := sandboxtest.NewKey()
			id := sandboxtest.NewID()
			t.Cleanup(func() { _ = b.Destroy(context.Background(), sandbox.Instance{ID: id}) })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			inst, err := b.Start(ctx, sandbox.StartRequest{ID: id, OwnerID: "owner", Spec: spec, SessionKey: key})
			if err != nil {
				t.Fatal(err)
			}
			rc := client(t, b, inst, key)
			got := probe(t, rc, append([]string{internet}, closedTargets...))
			if got[internet] != tt.internet {
				t.Errorf("the internet's server at %s: reached %v, want %v", internet, got[internet], tt.internet)
			}
			for _, target := range closedTargets {
				if got[target] {
					t.Errorf("a sandbox with network %s reached %s", tt.network, target)
				}
			}
		})
	}
}

// addAddr puts addr on the loopback device of the cluster's network namespace, until the
// test ends.
func addAddr(t *testing.T, c *kubetest.Cluster, addr string) {
	t.Helper()
	if out, err := exec.Command("ip", "-n", c.Netns, "addr", "add", addr+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v: %s", addr, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "-n", c.Netns, "addr", "del", addr+"/32", "dev", "lo").Run() })
}

// serveIn serves HTTP on addr in the cluster's network namespace and returns host:port.
func serveIn(t *testing.T, c *kubetest.Cluster, addr string) string {
	t.Helper()
	ln, err := c.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "reached")
	}), ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// client is a client of the sandbox's runtime that waits until it answers.
func client(t *testing.T, b *Backend, inst sandbox.Instance, key string) *runtimeclient.Client {
	t.Helper()
	rc, err := sandboxtest.NewClient(b, inst, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.CloseIdleConnections)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := rc.Identity(ctx)
		cancel()
		if err == nil {
			return rc
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runtime does not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// probe connects to each host:port target from inside the sandbox (bash's /dev/tcp) and
// reports which answered.
func probe(t *testing.T, rc *runtimeclient.Client, targets []string) map[string]bool {
	t.Helper()
	var sb strings.Builder
	for _, tg := range targets {
		host, port, _ := net.SplitHostPort(tg)
		fmt.Fprintf(&sb, "if timeout 20 bash -c 'exec 3<>/dev/tcp/%s/%s' 2>/dev/null; then echo open %s; else echo closed %s; fi; ", host, port, tg, tg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := rc.Run(ctx, runtimeclient.CommandRequest{Command: sb.String(), TimeoutSeconds: 300})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tg := range targets {
		switch {
		case strings.Contains(res.Output, "open "+tg+"\n"):
			got[tg] = true
		case !strings.Contains(res.Output, "closed "+tg+"\n"):
			t.Fatalf("the probe of %s did not run: %q", tg, res.Output)
		}
	}
	return got
}
