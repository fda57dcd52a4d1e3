package httpapi

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// WebSockets: what every socket of the API shares. Sockets live as long as the API, not
// their request: Close ends them all. A socket runs in its request's handler goroutine,
// with a reader goroutine (the library answers pings and close frames only while a read
// is in progress) and a pinger goroutine beside it, both stopped before the handler
// returns.

// SocketOptions tune the WebSockets; zero fields take the defaults. Tests shorten them.
type SocketOptions struct {
	// AuthTimeout bounds the wait for the auth frame of a socket opened without a key
	// (default 10 s, as OpenHands).
	AuthTimeout time.Duration
	// PingInterval is how often a socket is pinged; a peer that has not answered a ping by
	// the next one is cut off (default 30 s).
	PingInterval time.Duration
	// WriteTimeout bounds the sending of one frame; a peer that does not take it in time is
	// cut off (default 10 s).
	WriteTimeout time.Duration
	// MaxPerConversation bounds the event sockets of one conversation (default 50, as
	// OpenHands).
	MaxPerConversation int
}

func (o SocketOptions) withDefaults() SocketOptions {
	if o.AuthTimeout <= 0 {
		o.AuthTimeout = 10 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxPerConversation <= 0 {
		o.MaxPerConversation = 50
	}
	return o
}

// closeGrace is how long a closing socket waits for the peer's close frame before it cuts
// the connection (the library alone would wait up to 10 s).
const closeGrace = time.Second

// sockets tracks the open sockets: how many each conversation has, and their lifetime.
type sockets struct {
	o SocketOptions
	// ctx ends when the API closes; every socket then closes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	perConv map[string]int
}

func newSockets(o SocketOptions) *sockets {
	ctx, cancel := context.WithCancel(context.Background())
	return &sockets{o: o.withDefaults(), ctx: ctx, cancel: cancel, perConv: map[string]int{}}
}

// open registers a socket about to be accepted; false once the API is closing. Each true
// is followed by one done.
func (s *sockets) open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *sockets) done() { s.wg.Done() }

// join takes a place among the conversation's event sockets; false when none is left.
// Each true is followed by one leave.
func (s *sockets) join(convID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perConv[convID] >= s.o.MaxPerConversation {
		return false
	}
	s.perConv[convID]++
	return true
}

func (s *sockets) leave(convID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perConv[convID]--; s.perConv[convID] <= 0 {
		delete(s.perConv, convID)
	}
}

// close ends every socket and waits for their handlers. Safe to call twice.
func (s *sockets) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Close ends the API's WebSockets (close code 1001) and waits for them. http.Server's
// Shutdown does not wait for them: they left its hands when they were upgraded. Safe to
// call twice.
func (a *API) Close() { a.sockets.close() }

// hijackTap keeps the connection a WebSocket upgrade takes over, so that a peer that does
// not answer the close handshake can be cut off.
type hijackTap struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackTap) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, rw, err
}

// cut closes the connection without a close handshake.
func (h *hijackTap) cut() {
	if h.conn != nil {
		h.conn.Close()
	}
}
