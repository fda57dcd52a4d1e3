package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestEventSocketCutsOffASilentPeer: a peer that answers no ping is cut off. The peer here
// speaks the handshake by hand and then never reads a frame, so it never answers: the cut
// comes whatever the machine's speed, and the test waits for it with a generous bound.
func TestEventSocketCutsOffASilentPeer(t *testing.T) {
	e := newEnv(t)
	e.sockets.PingInterval = 100 * time.Millisecond
	e.restart()
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")

	u, err := url.Parse(c.socketURL(""))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, socketWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(socketWait)); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), "GET", "http://"+u.Host+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{
		"Upgrade":               {"websocket"},
		"Connection":            {"Upgrade"},
		"Sec-Websocket-Key":     {"dGhlIHNhbXBsZSBub25jZQ=="},
		"Sec-Websocket-Version": {"13"},
		"X-Session-Api-Key":     {alice},
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake answered %s", resp.Status)
	}
	// Read the raw bytes (the full state, then pings) without answering until the server
	// closes the connection.
	_, err = io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server did not cut off a peer that answers no ping within %v", socketWait)
	}
}
