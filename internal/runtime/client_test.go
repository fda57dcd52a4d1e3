package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// TestClientUnixSocket runs a server on a unix socket and uses every client method.
func TestClientUnixSocket(t *testing.T) {
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{SandboxID: "sb", Workspace: ws, SessionKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "rt.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx := context.Background()
	c, err := runtimeclient.NewClient("unix:"+sock, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Alive(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.Identity(ctx)
	if err != nil || id.SandboxID != "sb" || id.Workspace != ws {
		t.Fatalf("identity %+v, %v", id, err)
	}
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo hi"})
	if err != nil || res.Output != "hi\n" {
		t.Fatalf("run %+v, %v", res, err)
	}

	// Raw requests through HTTPClient reach the socket whatever the host.
	req, err := c.NewRequest(ctx, "GET", "/api/identity", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Host = "anything"
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("raw request: %d", resp.StatusCode)
	}

	bad, err := runtimeclient.NewClient("unix:"+sock, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Identity(ctx)
	var se *runtimeclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("identity with a wrong key: %v", err)
	}
	if err := bad.Alive(ctx); err != nil {
		t.Fatalf("alive needs no key: %v", err)
	}
}
