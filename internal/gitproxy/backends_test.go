package gitproxy_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/bwrap"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// The test binary doubles as `agentd runtime` for the sandboxes these tests start.
func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }

// backendCase is a sandbox backend the proxy is tried on, with the spec its sandboxes get.
type backendCase struct {
	name string
	new  func(t *testing.T) sandbox.Backend
	spec func() sandbox.Spec
}

var backendCases = []backendCase{
	{"process", newProcess, func() sandbox.Spec { return sandboxtest.RuntimeSpec("git") }},
	// No network at all: git reaches the relay on the sandbox's own loopback, and the relay
	// reaches agentd through the channel agentd opened.
	{"bwrap-none", newBwrap, func() sandbox.Spec {
		s := sandboxtest.RuntimeSpec("git")
		s.Network = sandbox.NetworkNone
		return s
	}},
	// The default network, which refuses the host's addresses: the loopback is the
	// sandbox's own all the same.
	{"bwrap-egress", newBwrap, func() sandbox.Spec {
		s := sandboxtest.RuntimeSpec("git")
		s.Network = sandbox.NetworkEgress
		return s
	}},
}

func newProcess(t *testing.T) sandbox.Backend {
	t.Helper()
	b, err := process.New(process.Options{Root: filepath.Join(sandboxtest.ShortDir(t), "process"), Binary: sandboxtest.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newBwrap returns a bwrap backend whose cgroups live under a parent of the test's own,
// removed when the test ends; it skips the test (fails it under CI) where bubblewrap does not
// work.
func newBwrap(t *testing.T) sandbox.Backend {
	t.Helper()
	root, err := os.MkdirTemp("", "agentd-g")
	if err != nil {
		t.Fatal(err)
	}
	parent := "agentd/test-gitproxy-" + filepath.Base(root)
	t.Cleanup(func() {
		os.RemoveAll(root)
		if cg, err := cgroup.Detect(); err == nil {
			if g, err := cg.Group(parent); err == nil {
				if err := g.Destroy(context.Background()); err != nil {
					t.Errorf("remove cgroup parent %s: %v", parent, err)
				}
			}
		}
	})
	b, err := bwrap.New(bwrap.Options{Root: root, Binary: sandboxtest.Binary(t), CgroupParent: parent,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		sandboxtest.Unavailable(t, "the bwrap backend is not available: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Probe(context.Background()); err != nil {
		sandboxtest.Unavailable(t, "bubblewrap does not work here: %v", err)
	}
	return b
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
