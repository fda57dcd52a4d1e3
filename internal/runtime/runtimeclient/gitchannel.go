package runtimeclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Git channel constants shared by the runtime and its client.
const (
	// GitChannelProtocol is the Upgrade token of GET /api/git/channel.
	GitChannelProtocol = "agentd-git/h2"
	// HeaderGitProxyAddr, in the 101 answer, is the loopback address (host:port) inside the
	// sandbox where git reaches the relay.
	HeaderGitProxyAddr = "Agentd-Git-Proxy"
)

// OpenGitChannel opens the connection on which agentd serves the sandbox's git requests
// (see package runtime's git relay): once it returns, the caller serves HTTP/2 on conn (as the
// server: the runtime sends the requests) until it closes. addr is where git inside the
// sandbox reaches the relay, e.g. 127.0.0.1:40123. ctx bounds the opening only; a frozen
// sandbox answers once it is thawed.
func (c *Client) OpenGitChannel(ctx context.Context) (_ net.Conn, addr string, err error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("open git channel: %w", err)
	}
	// Waiting for the answer is bounded by ctx, not by a deadline on conn, which would
	// outlive the opening.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer func() {
		if !stop() && err == nil {
			err = fmt.Errorf("open git channel: %w", ctx.Err())
		}
		if err != nil {
			conn.Close()
		}
	}()
	req, err := c.NewRequest(ctx, http.MethodGet, "/api/git/channel", nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", GitChannelProtocol)
	if err := req.Write(conn); err != nil {
		return nil, "", fmt.Errorf("open git channel: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, "", fmt.Errorf("open git channel: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, "", fmt.Errorf("open git channel: %w", &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(snippet))})
	}
	addr = resp.Header.Get(HeaderGitProxyAddr)
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		return nil, "", fmt.Errorf("open git channel: the runtime named no loopback address but %q", addr)
	}
	return withBuffered(conn, br), addr, nil
}

// bufferedConn is a connection whose first bytes were read into a buffer already.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// withBuffered returns conn reading first what br holds of it.
func withBuffered(conn net.Conn, br *bufio.Reader) net.Conn {
	n := br.Buffered()
	if n == 0 {
		return conn
	}
	peek, _ := br.Peek(n)
	return &bufferedConn{Conn: conn, r: io.MultiReader(bytes.NewReader(bytes.Clone(peek)), conn)}
}
