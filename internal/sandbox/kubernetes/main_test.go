package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/ociimage"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// The images the tests import into the cluster: agentd's (the runtime-only build, which the
// init container runs and copies) and the sandboxes' (the host's bash and core utilities,
// as the docker backend's tests use, with the test MCP server).
const (
	runtimeImage  = "localhost/agentd-test/agentd:test"
	sandboxImage  = "localhost/agentd-test/sandbox:test"
	testMCPServer = "/usr/local/bin/agentd-mcptest"
	testNamespace = "agentd-sandboxes"
)

// env is the cluster and the images the tests of the package share: one cluster per test
// binary, started in TestMain.
var env struct {
	cluster *kubetest.Cluster
	skip    error // the machine cannot run a cluster
	failure error // the cluster or the images failed
}

func TestMain(m *testing.M) {
	setup()
	code := m.Run()
	if env.cluster != nil {
		if code != 0 {
			fmt.Fprintln(os.Stderr, "the cluster's milestones:", env.cluster.Milestones)
		}
		if err := env.cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "kubernetes tests: close the cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c, err := kubetest.Up(ctx, kubetest.Options{})
	if errors.Is(err, kubetest.ErrUnavailable) {
		env.skip = err
		return
	}
	if err != nil {
		env.failure = err
		return
	}
	env.cluster = c
	if err := images(ctx, c); err != nil {
		env.failure = err
		return
	}
	_, err = c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{})
	if err != nil {
		env.failure = err
	}
}

// needCluster returns the shared cluster. It skips t when the machine cannot run one
// (failing instead under CI, as kubetest does), and fails t when it did not start.
func needCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	if env.skip != nil {
		sandboxtest.Unavailable(t, "kubernetes backend: %v", env.skip)
	}
	if env.failure != nil {
		t.Fatalf("kubernetes backend: %v", env.failure)
	}
	return env.cluster
}

// images builds the runtime-only agentd, the test MCP server and both images, and imports
// them into the cluster.
func images(ctx context.Context, c *kubetest.Cluster) error {
	dir, err := os.MkdirTemp("", "agentd-kube-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	agentdRoot := filepath.Join(dir, "agentd-root")
	if err := os.MkdirAll(agentdRoot, 0o755); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "agentd_runtime_only",
		"-o", filepath.Join(agentdRoot, "agentd"), "github.com/agentd/agentd/cmd/agentd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the runtime-only agentd: %w\n%s", err, out)
	}
	mcpServer := filepath.Join(dir, "mcpserver")
	if err := mcptest.BuildServer(ctx, mcpServer); err != nil {
		return err
	}
	rootfs, err := dockertest.RootfsTar(dockertest.ImageTools, dockertest.File{Path: testMCPServer, Host: mcpServer})
	if err != nil {
		return err
	}
	sandbox, err := ociimage.Tar(bytes.NewReader(rootfs))
	if err != nil {
		return err
	}
	agentd, err := ociimage.Dir(agentdRoot)
	if err != nil {
		return err
	}
	for _, img := range []ociimage.Image{
		{Name: runtimeImage, Layers: []ociimage.Layer{agentd}, Entrypoint: []string{"/agentd"}},
		{Name: sandboxImage, Layers: []ociimage.Layer{sandbox}, Env: []string{"PATH=" + dockertest.ImagePath}},
	} {
		tarball := filepath.Join(dir, path.Base(img.Name)+".tar")
		if _, err := ociimage.Write(tarball, img); err != nil {
			return err
		}
		if err := c.ImportImage(ctx, tarball); err != nil {
			return err
		}
	}
	return nil
}
