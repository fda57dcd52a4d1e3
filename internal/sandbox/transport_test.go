package sandbox_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
)

// viaTransport is the process backend whose runtimes can be reached only through the
// transport it supplies, as a remote backend's: its instances name an endpoint that no
// dialer finds, and the transport dials the runtime's socket.
type viaTransport struct {
	*process.Backend
	dials atomic.Int64
	mu    sync.Mutex
	socks map[string]string // the process backend's endpoint of each sandbox
}

const unreachable = "http://runtime.invalid:1"

func (b *viaTransport) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	inst, err := b.Backend.Start(ctx, req)
	if err != nil {
		return inst, err
	}
	b.mu.Lock()
	b.socks[inst.ID] = inst.Endpoint
	b.mu.Unlock()
	inst.Endpoint = unreachable
	return inst, nil
}

func (b *viaTransport) real(inst sandbox.Instance) sandbox.Instance {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ep, ok := b.socks[inst.ID]; ok {
		inst.Endpoint = ep
	}
	return inst
}

func (b *viaTransport) Pause(ctx context.Context, inst sandbox.Instance) error {
	return b.Backend.Pause(ctx, b.real(inst))
}

func (b *viaTransport) Resume(ctx context.Context, inst sandbox.Instance) error {
	return b.Backend.Resume(ctx, b.real(inst))
}

func (b *viaTransport) Destroy(ctx context.Context, inst sandbox.Instance) error {
	return b.Backend.Destroy(ctx, b.real(inst))
}

func (b *viaTransport) Inspect(ctx context.Context, inst sandbox.Instance) (sandbox.State, error) {
	return b.Backend.Inspect(ctx, b.real(inst))
}

func (b *viaTransport) Transport(inst sandbox.Instance) (runtimeclient.Transport, error) {
	sock := strings.TrimPrefix(b.real(inst).Endpoint, "unix:")
	return runtimeclient.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		b.dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, nil
}

// TestServiceTransport: the service reaches the runtime of a backend that supplies its
// transport through it, for the readiness wait and for its clients, and its clients go on
// with the connection the readiness wait of a start or a resume opened.
func TestServiceTransport(t *testing.T) {
	e := newEnv(t)
	b := &viaTransport{Backend: e.backend(), socks: map[string]string{}}
	s := e.service(b, nil)
	sb := startRunning(t, s, "alice")
	if sb.Instance.Endpoint != unreachable {
		t.Fatalf("endpoint %q, want %q", sb.Instance.Endpoint, unreachable)
	}
	ready := b.dials.Load()
	if ready == 0 {
		t.Fatal("the sandbox became RUNNING without a connection through the transport")
	}
	ctx := testContext(t)
	c, err := s.Client(ctx, "alice", sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo through"})
	if err != nil || strings.TrimSpace(res.Output) != "through" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	// The endpoint reaches nothing: the request went through the transport, on the
	// connection the readiness wait opened, which the service keeps.
	if n := b.dials.Load(); n != ready {
		t.Fatalf("the first request after the start dialled again (%d dials, %d before it)", n, ready)
	}
	// So after a resume: its probe's connection serves the next request.
	if err := s.Pause(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	resumed := b.dials.Load()
	if resumed == ready {
		t.Fatal("the resume's probe reached the runtime without a connection through the transport")
	}
	if c, err = s.Client(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo again"}); err != nil || strings.TrimSpace(res.Output) != "again" {
		t.Fatalf("run after the resume: %+v, %v", res, err)
	}
	if n := b.dials.Load(); n != resumed {
		t.Fatalf("the first request after the resume dialled again (%d dials, %d before it)", n, resumed)
	}
	if err := s.Delete(ctx, "alice", sb.ID); err != nil {
		t.Fatal(err)
	}
}
