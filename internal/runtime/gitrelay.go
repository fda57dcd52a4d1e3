package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// The git relay. Git in the sandbox speaks smart HTTP to a loopback port of the sandbox that
// the runtime serves, and the runtime hands each request on to agentd over a channel that
// agentd opened: agentd's GET /api/git/channel, upgraded to a raw stream on which the roles
// reverse, agentd serving HTTP/2 and the runtime its client. agentd adds the provider's
// credentials on the way upstream, so they never enter the sandbox, and the sandbox needs no
// route to agentd: it is reached only through the connection agentd made.
//
// The port is opened by the first channel and stays for the runtime's life, so the remote
// URL written in a clone's .git/config keeps working. Channels come and go (agentd restarts;
// a paused sandbox keeps its connection frozen): a request that finds none waits for the
// next, up to gitChannelWait, then fails with 503.

// gitChannelWait bounds how long a git request waits for agentd to open a channel.
const gitChannelWait = time.Minute

// errNoGitChannel: agentd has not (re)opened the channel in time.
var errNoGitChannel = errors.New("agentd is not connected to this sandbox's git relay")

type gitRelay struct {
	log  *slog.Logger
	wait time.Duration

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	cc     *http.ClientConn
	ready  chan struct{} // closed once cc is usable; replaced when it is dropped
	closed bool
}

func newGitRelay(log *slog.Logger) *gitRelay {
	return &gitRelay{log: log, wait: gitChannelWait, ready: make(chan struct{})}
}

// listen opens the relay's port, once, and returns its address.
func (g *gitRelay) listen() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return "", errors.New("the runtime is stopping")
	}
	if g.ln != nil {
		return g.ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("open the git relay's port: %w", err)
	}
	g.ln = ln
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := g.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("git relay stopped", "err", err)
		}
	}()
	g.log.Info("git relay listening", "addr", ln.Addr().String())
	return ln.Addr().String(), nil
}

// attach makes conn, on which agentd serves HTTP/2, the channel requests go to; it replaces
// the one before.
func (g *gitRelay) attach(conn net.Conn) error {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	var once sync.Once
	tr := &http.Transport{
		Protocols: &p,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			err := errors.New("the git channel is used already")
			once.Do(func() { err = nil })
			if err != nil {
				return nil, err
			}
			return conn, nil
		},
		// Bytes pass as they are: git compresses what it wants compressed.
		DisableCompression: true,
	}
	cc, err := tr.NewClientConn(context.Background(), "http", "agentd:80")
	if err != nil {
		conn.Close()
		return fmt.Errorf("start the git channel: %w", err)
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		cc.Close()
		return errors.New("the runtime is stopping")
	}
	old := g.cc
	g.cc = cc
	if old == nil { // else ready is closed already: it is closed exactly while cc is set
		close(g.ready)
	}
	g.mu.Unlock()
	if old != nil {
		old.Close()
	}
	cc.SetStateHook(func(cc *http.ClientConn) {
		if cc.Err() != nil {
			g.drop(cc)
		}
	})
	g.log.Info("git channel opened")
	return nil
}

// drop forgets cc if it is the current channel, so that requests wait for the next one.
func (g *gitRelay) drop(cc *http.ClientConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cc == cc {
		g.cc = nil
		g.ready = make(chan struct{})
		g.log.Info("git channel closed", "err", cc.Err())
	}
}

// channel returns a usable channel, waiting up to g.wait for one.
func (g *gitRelay) channel(ctx context.Context) (*http.ClientConn, error) {
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		cc, ready, closed := g.cc, g.ready, g.closed
		g.mu.Unlock()
		if closed {
			return nil, errors.New("the runtime is stopping")
		}
		if cc != nil && cc.Err() == nil {
			return cc, nil
		}
		if cc != nil {
			g.drop(cc)
			continue
		}
		select {
		case <-ready:
		case <-timer.C:
			return nil, errNoGitChannel
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// close stops the relay's port and its channel. Safe to call twice.
func (g *gitRelay) close() {
	g.mu.Lock()
	g.closed = true
	srv, cc := g.srv, g.cc
	g.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if cc != nil {
		cc.Close()
	}
}

// hopHeaders are a connection's own, never passed on; nor are credentials from the sandbox
// (agentd sets its own upstream).
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect", "Authorization", "Cookie",
}

// ServeHTTP hands one git request to agentd and streams the answer back.
func (g *gitRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Pushes send their whole pack before the answer starts, but nothing requires that.
	_ = http.NewResponseController(w).EnableFullDuplex()
	resp, err := g.roundTrip(r)
	if err != nil {
		if r.Context().Err() == nil {
			g.log.Warn("git request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		status := http.StatusBadGateway
		if errors.Is(err, errNoGitChannel) {
			status = http.StatusServiceUnavailable
		}
		http.Error(w, "agentd git relay: "+err.Error(), status)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyFlushing(w, resp.Body); err != nil && r.Context().Err() == nil {
		g.log.Warn("git answer cut short", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}

// roundTrip sends r on the channel. A request that meets a channel closing under it before
// its body was read is sent again on the next channel; a body cannot be sent twice.
func (g *gitRelay) roundTrip(r *http.Request) (*http.Response, error) {
	body := &onceBody{r: r.Body}
	for attempt := 0; ; attempt++ {
		cc, err := g.channel(r.Context())
		if err != nil {
			return nil, err
		}
		out := &http.Request{
			Method: r.Method,
			URL:    &url.URL{Scheme: "http", Host: "agentd", Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
			Header: r.Header.Clone(), Host: "agentd",
			Body: body, ContentLength: r.ContentLength,
		}
		if r.ContentLength == 0 {
			out.Body = http.NoBody
		}
		for _, k := range hopHeaders {
			out.Header.Del(k)
		}
		resp, err := cc.RoundTrip(out.WithContext(r.Context()))
		if err == nil {
			return resp, nil
		}
		if cc.Err() == nil || body.read.Load() || attempt >= 2 {
			return nil, err
		}
		g.drop(cc)
	}
}

// onceBody is a request body that says whether any of it was read. Closing it does nothing:
// a transport closes a body it failed to send, and it may yet be sent on another channel
// (the server closes the request's own body).
type onceBody struct {
	r    io.Reader
	read atomic.Bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

func (b *onceBody) Close() error { return nil }

// copyFlushing copies src to w, flushing after each read so that git's progress (side-band
// messages) reaches it as it comes.
func copyFlushing(w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
