package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
)

func TestNewClientEndpoints(t *testing.T) {
	tests := []struct {
		endpoint string
		base     string
		ok       bool
	}{
		{"unix:/run/x.sock", unixBaseURL, true},
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000", true},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000", true},
		{"unix:rel.sock", "", false},
		{"tcp:127.0.0.1:80", "", false},
		{"http://", "", false},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.endpoint, "k")
		if (err == nil) != tt.ok {
			t.Fatalf("NewClient(%q) error %v, want ok=%v", tt.endpoint, err, tt.ok)
		}
		if tt.ok && (c.BaseURL() != tt.base || c.Endpoint() != tt.endpoint) {
			t.Fatalf("NewClient(%q): base %q, endpoint %q", tt.endpoint, c.BaseURL(), c.Endpoint())
		}
	}
}

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
	c, err := NewClient("unix:"+sock, testKey)
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
	res, err := c.Run(ctx, CommandRequest{Command: "echo hi"})
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

	bad, err := NewClient("unix:"+sock, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Identity(ctx)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("identity with a wrong key: %v", err)
	}
	if err := bad.Alive(ctx); err != nil {
		t.Fatalf("alive needs no key: %v", err)
	}
}
