package runtimeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// dialTimeout bounds a connection to a runtime on this machine: one that does not accept it
// quickly is not ready (or is frozen). A Transport's dialer sets its own bounds.
const dialTimeout = 2 * time.Second

// unixBaseURL is the URL base used for a unix socket endpoint; the host part is ignored.
const unixBaseURL = "http://sandbox"

// Client talks to one runtime. It is safe for concurrent use.
type Client struct {
	endpoint string
	baseURL  string
	key      string
	hc       *http.Client
	// dial opens a connection to the runtime, TLS included for an https endpoint, for the
	// git channel (which takes the connection over from HTTP).
	dial func(ctx context.Context) (net.Conn, error)
}

// StatusError is returned when the runtime answers with a status other than the expected one.
type StatusError struct {
	StatusCode int
	// Body is the start of the answer's body, for logs.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("runtime answered %d: %s", e.StatusCode, e.Body)
}

// Detail is the runtime's words for the refusal: the body's detail when it is a string (the
// runtime's own refusals), else the body as it came.
func (e *StatusError) Detail() string {
	var body struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal([]byte(e.Body), &body) == nil && body.Detail != "" {
		return body.Detail
	}
	return e.Body
}

// ErrNoAnswer wraps the error of a request the runtime did not answer: no connection, or one
// cut off before the whole answer came. The transport's error it wraps may name a host path
// (the runtime's socket): it is for logs, not for users.
var ErrNoAnswer = errors.New("the sandbox's runtime did not answer")

// Transport says how to reach a runtime that is not simply at its endpoint's address from
// this process: a backend whose sandboxes run elsewhere supplies one (a pod's address found
// when a connection is made, or a stream through the cluster's API server, and the pinned
// certificate of the runtime's TLS).
type Transport struct {
	// DialContext opens a connection to the runtime; it is given the endpoint's host and
	// port, which it may ignore. nil dials that address.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS configures the TLS of an https endpoint (its verification: pinning the runtime's
	// certificate, say); nil means Go's defaults, the system's roots.
	TLS *tls.Config
}

// NewClient returns a client for endpoint, "unix:/abs/path.sock" or "http(s)://host:port",
// that sends key with every request.
func NewClient(endpoint, key string) (*Client, error) {
	return NewClientWith(endpoint, key, Transport{})
}

// NewClientWith is NewClient for a runtime reached through t. A unix endpoint takes no
// Transport.
func NewClientWith(endpoint, key string, t Transport) (*Client, error) {
	tr := &http.Transport{
		Proxy:                 nil,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       t.TLS,
	}
	c := &Client{endpoint: endpoint, key: key, hc: &http.Client{Transport: tr}}
	switch {
	case strings.HasPrefix(endpoint, "unix:"):
		path := strings.TrimPrefix(endpoint, "unix:")
		if !filepath.IsAbs(path) {
			return nil, fmt.Errorf("new runtime client: socket path %q is not absolute", path)
		}
		if t.DialContext != nil || t.TLS != nil {
			return nil, fmt.Errorf("new runtime client: a unix endpoint (%s) takes no transport", endpoint)
		}
		dialer := &net.Dialer{Timeout: dialTimeout}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}
		c.baseURL = unixBaseURL
		c.dial = func(ctx context.Context) (net.Conn, error) { return tr.DialContext(ctx, "unix", path) }
	case strings.HasPrefix(endpoint, "http://"), strings.HasPrefix(endpoint, "https://"):
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("new runtime client: bad endpoint %q", endpoint)
		}
		tr.DialContext = t.DialContext
		if tr.DialContext == nil {
			tr.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
		}
		c.baseURL = strings.TrimRight(endpoint, "/")
		c.dial = hostDialer(u, tr.DialContext, t.TLS)
	default:
		return nil, fmt.Errorf("new runtime client: endpoint %q is neither unix: nor http(s)://", endpoint)
	}
	return c, nil
}

// hostDialer connects to the host of u with dial, and for https makes the TLS handshake that
// an http.Transport would.
func hostDialer(u *url.URL, dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context) (net.Conn, error) {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx, "tcp", addr)
		if err != nil || u.Scheme != "https" {
			return conn, err
		}
		if cfg == nil {
			cfg = &tls.Config{}
		}
		cfg = cfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		// The connection is taken over from HTTP/1.1 (an Upgrade): no ALPN for HTTP/2.
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}

// Endpoint returns the endpoint the client was made for.
func (c *Client) Endpoint() string { return c.endpoint }

// BaseURL returns the URL prefix requests go to (for a unix socket, a placeholder host).
func (c *Client) BaseURL() string { return c.baseURL }

// HTTPClient returns the underlying client, whose transport reaches the runtime whatever host
// a request names. Requests made with it do not carry the key unless NewRequest made them.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// NewRequest builds a request for path (starting with "/") carrying the session key.
func (c *Client) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(HeaderSessionKey, c.key)
	return req, nil
}

// CloseIdleConnections closes the connections kept for reuse.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Alive reports whether the runtime answers its liveness probe.
func (c *Client) Alive(ctx context.Context) error {
	if err := c.call(ctx, http.MethodGet, "/alive", nil, nil); err != nil {
		return fmt.Errorf("runtime alive: %w", err)
	}
	return nil
}

// Identity asks the runtime who it is; it needs the right key.
func (c *Client) Identity(ctx context.Context) (Identity, error) {
	var id Identity
	if err := c.call(ctx, http.MethodGet, "/api/identity", nil, &id); err != nil {
		return Identity{}, fmt.Errorf("runtime identity: %w", err)
	}
	return id, nil
}

// Run runs a command and waits for it. ctx bounds the wait; cancelling it kills the command.
func (c *Client) Run(ctx context.Context, req CommandRequest) (CommandResult, error) {
	var res CommandResult
	if err := c.call(ctx, http.MethodPost, "/api/command", req, &res); err != nil {
		return CommandResult{}, fmt.Errorf("runtime command: %w", err)
	}
	return res, nil
}

// Tool runs a sandbox tool (terminal, file_editor, glob, grep) for a conversation, with the
// model's arguments as they came. Arguments that do not fit the tool give a Result with
// IsError set, not an error; an unknown tool, or one that runs in the control plane, is a
// *StatusError with code 404. ctx bounds the call: when it ends, the runtime stops waiting but
// a terminal command keeps running, as after a timeout.
func (c *Client) Tool(ctx context.Context, name, conversationID string, args json.RawMessage) (tool.Result, error) {
	return c.RunTool(ctx, name, ToolRequest{ConversationID: conversationID, Arguments: args})
}

// RunTool is Tool with the whole request, which may also bound the terminal's waits.
func (c *Client) RunTool(ctx context.Context, name string, req ToolRequest) (tool.Result, error) {
	if len(bytes.TrimSpace(req.Arguments)) > 0 && !json.Valid(req.Arguments) {
		// Not JSON at all: the model's mistake, which cannot even be sent on.
		return (&tool.ArgsError{Tool: name, Malformed: true}).Result(), nil
	}
	var res tool.Result
	if err := c.call(ctx, http.MethodPost, "/api/tools/"+url.PathEscape(name), req, &res); err != nil {
		return tool.Result{}, fmt.Errorf("runtime tool %s: %w", name, err)
	}
	return res, nil
}

// InterruptTool stops the command a conversation's terminal runs for a call the caller gave
// up on (its agent was paused): C-c, then the end of the terminal's session when the command
// runs on. It reports the command, or false when there was none.
func (c *Client) InterruptTool(ctx context.Context, conversationID string) (tool.Result, bool, error) {
	var res InterruptResult
	if err := c.call(ctx, http.MethodPost, "/api/tools/sessions/"+url.PathEscape(conversationID)+"/interrupt", nil, &res); err != nil {
		return tool.Result{}, false, fmt.Errorf("runtime interrupt: %w", err)
	}
	if !res.Interrupted || res.Result == nil {
		return tool.Result{}, false, nil
	}
	return *res.Result, true, nil
}

// CloseToolSession ends a conversation's tool session: it kills its terminal and everything
// running there and forgets its edit history. It reports whether there was a session.
func (c *Client) CloseToolSession(ctx context.Context, conversationID string) (bool, error) {
	var res CloseToolSessionResult
	if err := c.call(ctx, http.MethodDelete, "/api/tools/sessions/"+url.PathEscape(conversationID), nil, &res); err != nil {
		return false, fmt.Errorf("runtime close tool session: %w", err)
	}
	return res.Closed, nil
}

// call sends in (if not nil) as JSON and decodes a 200 answer into out (if not nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	return c.callWith(ctx, method, path, nil, in, out)
}

// callWith is call with the headers h added to the request.
func (c *Client) callWith(ctx context.Context, method, path string, h http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.NewRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return noAnswer(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return noAnswer(ctx, err)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return noAnswer(ctx, err)
		}
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// noAnswer marks a transport error as ErrNoAnswer, unless it is the caller's context that
// ended the request.
func noAnswer(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoAnswer, err)
}

// Deliver hands a pooled runtime its session key and environment (see DeliverRequest). The
// client must have been made with the pool's secret as its key. The answer is the runtime's
// identity, as it serves from then on; a runtime that took a delivery already refuses the
// next one.
func (c *Client) Deliver(ctx context.Context, req DeliverRequest) (Identity, error) {
	var id Identity
	if err := c.call(ctx, http.MethodPost, PathDeliver, req, &id); err != nil {
		return Identity{}, fmt.Errorf("runtime delivery: %w", err)
	}
	return id, nil
}
