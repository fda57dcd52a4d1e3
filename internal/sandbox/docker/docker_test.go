package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// testImage is the image the tests build and run; testMCPServer is where it has the test MCP
// server (mcptest's, statically linked).
const (
	testImage     = "agentd-test/sandbox:latest"
	testMCPServer = "/usr/local/bin/agentd-mcptest"
)

// engine is the private dockerd, the image and the static agentd binary the tests share. It is
// set up by the first test that needs it and torn down by TestMain.
var engine struct {
	once    sync.Once
	daemon  *dockertest.Daemon
	tmp     string
	binary  string
	skip    error // the machine cannot run an engine
	failure error // the engine or the build failed
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "docker tests: teardown:", err)
		code = 1
	}
	os.Exit(code)
}

// needEngine returns the shared engine, starting it on first use. It skips t when the machine
// cannot run one (failing instead under CI), and fails t when starting it failed.
func needEngine(t *testing.T) *dockertest.Daemon {
	t.Helper()
	engine.once.Do(setup)
	if engine.skip != nil {
		sandboxtest.Unavailable(t, "docker backend: %v", engine.skip)
	}
	if engine.failure != nil {
		t.Fatalf("docker backend: %v", engine.failure)
	}
	return engine.daemon
}

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d, err := dockertest.Start(ctx)
	if errors.Is(err, dockertest.ErrUnavailable) {
		engine.skip = err
		return
	}
	if err != nil {
		engine.failure = err
		return
	}
	engine.daemon = d
	if engine.tmp, err = os.MkdirTemp("", "agentd-docker-"); err != nil {
		engine.failure = err
		return
	}
	engine.binary = filepath.Join(engine.tmp, "agentd")
	if err := dockertest.BuildAgentd(ctx, engine.binary); err != nil {
		engine.failure = err
		return
	}
	mcpServer := filepath.Join(engine.tmp, "mcpserver")
	if err := mcptest.BuildServer(ctx, mcpServer); err != nil {
		engine.failure = err
		return
	}
	if err := dockertest.BuildImage(ctx, d.Client, testImage, dockertest.File{Path: testMCPServer, Host: mcpServer}); err != nil {
		engine.failure = err
	}
}

func teardown() error {
	var errs []error
	if engine.daemon != nil {
		errs = append(errs, engine.daemon.Stop())
	}
	if engine.tmp != "" {
		errs = append(errs, os.RemoveAll(engine.tmp))
	}
	return errors.Join(errs...)
}

// newBackend returns a backend on the shared engine whose sandbox directories live in root,
// closed at cleanup.
func newBackend(t *testing.T, d *dockertest.Daemon, root string) *Backend {
	t.Helper()
	b, err := New(Options{Host: d.Host, Root: root, Binary: engine.binary})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// testSpec runs the static agentd in the test image.
func testSpec() sandbox.Spec {
	spec := sandboxtest.RuntimeSpec("docker-test")
	spec.Image = testImage
	spec.WorkingDir = "/workspace"
	return spec
}

func TestConformance(t *testing.T) {
	d := needEngine(t)
	root := filepath.Join(t.TempDir(), "sandboxes")
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newBackend(t, d, root) }, sandboxtest.Options{
		Spec: testSpec(),
		Unsupported: []sandboxtest.SpecChange{
			{Name: "Rootfs", Apply: func(s *sandbox.Spec) { s.Rootfs = "/" }},
			{Name: "DiskLimit", Apply: func(s *sandbox.Spec) { s.Limits.DiskBytes = 1 << 30 }},
			{Name: "NoImage", Apply: func(s *sandbox.Spec) { s.Image = "" }},
		},
		Leftovers: func(inst sandbox.Instance) []string {
			st, _ := decodeState(inst)
			left := d.Leftovers(context.Background(), labelSandbox, inst.ID, st.ContainerID)
			if _, err := os.Stat(filepath.Join(root, inst.ID)); !errors.Is(err, os.ErrNotExist) {
				left = append(left, "directory "+filepath.Join(root, inst.ID))
			}
			return left
		},
		New: func(root, binary string) (sandbox.Backend, error) {
			return New(Options{Host: d.Host, Root: root, Binary: binary})
		},
		Binary:     engine.binary,
		MCPServer:  testMCPServer,
		SandboxDir: func(id string) string { return filepath.Join(root, id) },
		// The backend does not pull: the start fails once the sandbox's directory and
		// volume exist, and must remove them.
		StartFailure: sandboxtest.StartFailure{
			Apply: func(s *sandbox.Spec) { s.Image = "agentd-test/missing:none" },
			Cause: "not on the engine",
		},
		// The image's PATH stays; HOME is not the backend's to set.
		Env: func(sandbox.Instance) map[string]string {
			return map[string]string{"PATH": dockertest.ImagePath, "TERM": "xterm-256color"}
		},
		// Each container has its own mount, PID and network namespaces (Docker's "none"
		// network has only a loopback of its own) and its own cgroup with the spec's memory
		// and pids limits.
		IsolatesFilesystem: true,
		IsolatesSandboxes:  true,
		IsolatesNetwork:    true,
		LimitsMemory:       true,
		LimitsPIDs:         true,
		Confines:           true,
		AgentdPath:         binaryInContainer,
		DefaultLimits:      defaultLimits(t),
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
