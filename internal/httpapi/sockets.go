package httpapi

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Live streams: what the event sockets (WebSocket) and the event streams (SSE) share. Streams
// live as long as the API, not their request: Close ends them all. A socket runs in its
// request's handler goroutine, with a reader goroutine (the library answers pings and close
// frames only while a read is in progress) and a pinger goroutine beside it, both stopped
// before the handler returns; an SSE stream runs in its handler goroutine alone. Both read the
// conversation through a feed (conversation.Service.Follow).

// SocketOptions tune the live streams; zero fields take the defaults. The configuration sets
// some (see config.Config); tests shorten the rest.
type SocketOptions struct {
	// AuthTimeout bounds the wait for the auth frame of a socket opened without a key
	// (default 10 s, as OpenHands).
	AuthTimeout time.Duration
	// PingInterval is how often a stream shows it is alive (default 30 s): a socket is pinged,
	// and a peer that has not answered a ping by the next one is cut off; an SSE stream
	// sends a comment, which keeps proxies from closing an idle stream.
	PingInterval time.Duration
	// WriteTimeout bounds the sending of one frame or event; a peer that does not take it in
	// time is cut off (default 10 s).
	WriteTimeout time.Duration
	// MaxPerConversation bounds the live streams of one conversation, sockets and SSE streams
	// together (default 100).
	MaxPerConversation int
	// EventBuffer is how many live events may wait to be sent on one stream (default 256); a
	// stream further behind is closed, and its client resumes after the last event it got.
	EventBuffer int
}

// Defaults of SocketOptions.
const (
	DefaultMaxStreams  = 100
	DefaultEventBuffer = 256
)

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
		o.MaxPerConversation = DefaultMaxStreams
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = DefaultEventBuffer
	}
	return o
}

// closeGrace is how long a closing socket waits for the peer's close frame before it cuts
// the connection (the library alone would wait up to 10 s).
const closeGrace = time.Second

// sockets tracks the open streams: how many each conversation has, and their lifetime.
type sockets struct {
	o SocketOptions
	// ctx ends when the API closes; every stream then closes.
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

// open registers a stream about to be served; false once the API is closing. Each true is
// followed by one done.
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

// join takes a place among the conversation's streams; false when none is left. Each true
// is followed by one leave.
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

// close ends every stream and waits for their handlers. Safe to call twice.
func (s *sockets) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Close ends the API's live streams (WebSockets with close code 1001, SSE streams with a
// final event) and waits for them. http.Server's Shutdown does not wait for the WebSockets
// (they left its hands when they were upgraded) and would wait for ever for an SSE stream.
// Safe to call twice.
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
