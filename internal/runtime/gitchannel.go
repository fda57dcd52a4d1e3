package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// handleGitChannel upgrades agentd's request to the raw stream on which agentd serves git's
// requests over HTTP/2 (see gitRelay). The answer names the relay's address in the sandbox.
func (s *Server) handleGitChannel(w http.ResponseWriter, r *http.Request) {
	if !headerHas(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), runtimeclient.GitChannelProtocol) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", runtimeclient.GitChannelProtocol)
		writeDetail(w, http.StatusUpgradeRequired, "Upgrade to "+runtimeclient.GitChannelProtocol+" required")
		return
	}
	addr, err := s.relay.listen()
	if err != nil {
		s.log.Error("git channel", "err", err)
		writeDetail(w, http.StatusServiceUnavailable, "The git relay cannot listen")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Error("git channel: hijack", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	// The server's header deadline must not end the channel.
	_ = conn.SetDeadline(time.Time{})
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n\r\n",
		runtimeclient.GitChannelProtocol, runtimeclient.HeaderGitProxyAddr, addr)
	if err := brw.Flush(); err != nil {
		conn.Close()
		s.log.Warn("git channel: answer", "err", err)
		return
	}
	if err := s.relay.attach(withBuffered(conn, brw.Reader)); err != nil {
		s.log.Warn("git channel", "err", err)
	}
}

// headerHas reports whether the comma-separated header name lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
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
