package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// serveH2 serves HTTP/2 without TLS on conn, as agentd does on a git channel, until conn
// closes.
func serveH2(t *testing.T, conn net.Conn, h http.Handler) {
	t.Helper()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	ln := &oneConnListener{conn: conn, done: make(chan struct{})}
	srv := &http.Server{Protocols: &p, Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			ln.Close()
		}
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
}

type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.UnixAddr{Name: "git-channel", Net: "unix"} }

// unixRuntime serves a runtime on a unix socket and returns a client of it.
func unixRuntime(t *testing.T) (*Server, *runtimeclient.Client) {
	t.Helper()
	s, err := NewServer(ServerConfig{SandboxID: "sb", Workspace: t.TempDir(), SessionKey: testKey, Logger: slog.New(slog.DiscardHandler)})
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
	t.Cleanup(func() {
		_ = srv.Close()
		s.Close()
	})
	c, err := runtimeclient.NewClient("unix:"+sock, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// echoGit answers as agentd's proxy would be asked: it reports what reached it and streams
// the request body back in upper case.
var echoGit = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" auth="+r.Header.Get("Authorization")+" proto="+r.Header.Get("Git-Protocol"))
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	b, _ := io.ReadAll(r.Body)
	_, _ = w.Write([]byte(strings.ToUpper(string(b))))
})

// gitPost sends what git would to the relay, with credentials of its own.
func gitPost(addr, path string) (*http.Response, string, error) {
	req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader("want abc"))
	req.Header.Set("Authorization", "Basic c2FuZGJveDpzZWNyZXQ=")
	req.Header.Set("Git-Protocol", "version=2")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func mustGitPost(t *testing.T, addr, path string) (*http.Response, string) {
	t.Helper()
	resp, body, err := gitPost(addr, path)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestGitRelay: git's requests to the relay's loopback port reach the handler agentd serves
// on the channel, without credentials from the sandbox, with the answer streamed back; when
// agentd's side of the channel goes, requests wait for the next channel, which keeps the port.
func TestGitRelay(t *testing.T) {
	_, c := unixRuntime(t)
	ctx := context.Background()
	conn, addr, err := c.OpenGitChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	serveH2(t, conn, echoGit)
	resp, body := mustGitPost(t, addr, "/github/octo/hello.git/git-upload-pack?x=1")
	if resp.StatusCode != 200 || body != "WANT ABC" ||
		resp.Header.Get("X-Seen") != "POST /github/octo/hello.git/git-upload-pack?x=1 auth= proto=version=2" {
		t.Fatalf("through the relay: %d %q %q", resp.StatusCode, body, resp.Header.Get("X-Seen"))
	}

	// agentd goes away; a request sent meanwhile is answered once agentd is back.
	conn.Close()
	answered := make(chan string, 1)
	go func() {
		resp, body, err := gitPost(addr, "/github/octo/hello.git/git-upload-pack")
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- resp.Status + " " + body
	}()
	conn2, addr2, err := c.OpenGitChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if addr2 != addr {
		t.Fatalf("a new channel moved the relay from %s to %s", addr, addr2)
	}
	serveH2(t, conn2, echoGit)
	select {
	case got := <-answered:
		if got != "200 OK WANT ABC" {
			t.Fatalf("after the channel came back: %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a request sent while the channel was down was never answered")
	}
}

// TestGitRelayWithoutChannel: without a channel a request fails with 503 once the wait is
// over, and the runtime's stop ends the relay.
func TestGitRelayWithoutChannel(t *testing.T) {
	s, c := unixRuntime(t)
	conn, addr, err := c.OpenGitChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	s.relay.mu.Lock()
	s.relay.wait = 10 * time.Millisecond // nothing will come: how long it waits does not matter
	s.relay.mu.Unlock()
	resp, body := mustGitPost(t, addr, "/github/octo/hello.git/info/refs")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "not connected") {
		t.Fatalf("without a channel: %d %q", resp.StatusCode, body)
	}
	s.Close()
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the relay still listens after Close")
	}
}

// TestGitChannelRefusals: the channel needs the session key and the upgrade.
func TestGitChannelRefusals(t *testing.T) {
	_, c := unixRuntime(t)
	bad, err := runtimeclient.NewClient(c.Endpoint(), "wrong")
	if err != nil {
		t.Fatal(err)
	}
	var se *runtimeclient.StatusError
	if _, _, err := bad.OpenGitChannel(context.Background()); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %v", err)
	}
	req, _ := c.NewRequest(context.Background(), "GET", "/api/git/channel", nil)
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("without the upgrade: %d", resp.StatusCode)
	}
}
