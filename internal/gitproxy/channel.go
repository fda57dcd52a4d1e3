package gitproxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// channel is the git channel of one sandbox, kept by one goroutine (Service.run).
type channel struct {
	owner, sandbox string
	// addr is the relay's address in the sandbox, set before opened is closed.
	addr   string
	opened chan struct{}
	once   sync.Once
	// err says why the keeper stopped, set before done is closed.
	err  error
	done chan struct{}
}

// run keeps the channel open until the sandbox is gone or ctx ends: it opens it, serves the
// sandbox's git requests on it until it drops, and opens it again.
func (s *Service) run(ctx context.Context, ch *channel) error {
	log := s.log.With("sandbox_id", ch.sandbox)
	wait := retryAfter
	for {
		err := s.openAndServe(ctx, ch)
		if ctx.Err() != nil {
			return errors.New("the server is stopping")
		}
		var nr *sandbox.NotRunningError
		if errors.Is(err, sandbox.ErrNotFound) || (errors.As(err, &nr) && nr.Status != sandbox.StatusPaused) {
			log.Debug("git channel ends with its sandbox", "err", err)
			return err
		}
		var se *runtimeclient.StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
			log.Warn("the sandbox's runtime has no git relay: it is older than this server", "err", err)
			return errors.New("the sandbox's runtime is too old for git: start a new sandbox")
		}
		if err == nil {
			wait = retryAfter // it was open: try again at once, or nearly
		} else {
			log.Warn("git channel", "err", err, "retry_in", wait)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return errors.New("the server is stopping")
		}
		if err != nil {
			wait = min(2*wait, maxRetryAfter)
		}
	}
}

// openAndServe opens the channel and serves it until it closes; nil means it was open.
func (s *Service) openAndServe(ctx context.Context, ch *channel) error {
	rt, err := s.o.Runtime(ctx, ch.owner, ch.sandbox)
	if err != nil {
		return err
	}
	conn, addr, err := rt.OpenGitChannel(ctx)
	if err != nil {
		return err
	}
	ch.once.Do(func() {
		ch.addr = addr
		close(ch.opened)
	})
	s.log.Debug("git channel open", "sandbox_id", ch.sandbox, "addr", addr)
	serveChannel(ctx, conn, &proxy{s: s, owner: ch.owner, sandbox: ch.sandbox}, s.log)
	return nil
}

// serveChannel serves HTTP/2 without TLS on conn until it closes or ctx ends. The runtime
// sends the requests: on this connection agentd is the server.
func serveChannel(ctx context.Context, conn net.Conn, h http.Handler, log *slog.Logger) {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	ln := newConnListener(conn)
	srv := &http.Server{
		Protocols: &p,
		Handler:   h,
		// No timeouts: a paused sandbox keeps its connection, frozen, until it is resumed.
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				ln.Close()
			}
		},
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("git channel: serve", "err", err)
	}
	srv.Close()
}

// connListener is a listener that accepts one connection, then waits until Close.
type connListener struct {
	mu   sync.Mutex
	conn net.Conn
	addr net.Addr
	done chan struct{}
	once sync.Once
}

func newConnListener(conn net.Conn) *connListener {
	return &connListener{conn: conn, addr: conn.LocalAddr(), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
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

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
