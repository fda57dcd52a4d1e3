package runtimeclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestTransport: a client whose endpoint names no address it could dial reaches the runtime
// through its Transport, over the TLS the Transport configures, for requests and for the git
// channel; a Transport that trusts another certificate reaches nothing.
func TestTransport(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSessionKey) != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/alive":
		case "/api/git/channel":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: 127.0.0.1:4242\r\n\r\nhello", GitChannelProtocol, HeaderGitProxyAddr)
			brw.Flush()
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	srv.StartTLS()
	defer srv.Close()

	var (
		mu     sync.Mutex
		dialed []string
	)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	trusted.ServerName = "example.com" // httptest's certificate names it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := NewClientWith("https://runtime.invalid:8443", "k", Transport{DialContext: dial, TLS: trusted})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if err := c.Alive(ctx); err != nil {
		t.Fatalf("alive through the transport: %v", err)
	}
	conn, addr, err := c.OpenGitChannel(ctx)
	if err != nil {
		t.Fatalf("git channel through the transport: %v", err)
	}
	buf := make([]byte, 5)
	if _, err := conn.Read(buf); err != nil || string(buf) != "hello" || addr != "127.0.0.1:4242" {
		t.Fatalf("git channel: read %q (%v), addr %q", buf, err, addr)
	}
	conn.Close()
	mu.Lock()
	seen := slices.Clone(dialed)
	mu.Unlock()
	for _, a := range seen {
		if a != "runtime.invalid:8443" {
			t.Errorf("the transport was asked to dial %q, want the endpoint's host and port", a)
		}
	}

	other := &tls.Config{RootCAs: nil, ServerName: "example.com"} // the system's roots: not httptest's
	c2, err := NewClientWith("https://runtime.invalid:8443", "k", Transport{DialContext: dial, TLS: other})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseIdleConnections()
	if err := c2.Alive(ctx); err == nil {
		t.Fatal("a client that does not trust the runtime's certificate reached it")
	}
	if _, _, err := c2.OpenGitChannel(ctx); err == nil {
		t.Fatal("a git channel opened to a runtime whose certificate is not trusted")
	}

	if _, err := NewClientWith("unix:/run/x.sock", "k", Transport{DialContext: dial}); err == nil {
		t.Fatal("a unix endpoint took a transport")
	}
}
