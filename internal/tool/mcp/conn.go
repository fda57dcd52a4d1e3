package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// errClosed is reported for uses of a server after its hub closed.
var errClosed = errors.New("mcp server closed")

// stdioGrace is how long a stdio server has to exit once its stdin is closed.
const stdioGrace = 2 * time.Second

// conn is one server and its session, connected again when the session ends. Its methods
// are safe for concurrent use.
type conn struct {
	spec Server
	opts Options
	log  *slog.Logger
	// life ends when the conn closes; it cancels a connection in progress.
	life context.Context
	stop context.CancelFunc
	// changed is called when the server says its tools changed.
	changed func()

	mu     sync.Mutex
	sess   *sdk.ClientSession
	cmd    *exec.Cmd
	stderr *tail
	tools  []*sdk.Tool
	// stale is set when the tools must be listed again before they are used; listChanged
	// when the server said so.
	stale       bool
	listChanged atomic.Bool
	closed      bool
	// failed is why the last connection or listing failed; nil once one succeeds.
	failed error
}

func newConn(spec Server, opts Options, log *slog.Logger, changed func()) *conn {
	life, stop := context.WithCancel(context.Background())
	return &conn{spec: spec, opts: opts, log: log.With("mcp_server", spec.Name), life: life, stop: stop, changed: changed, stale: true}
}

// session returns the live session, connecting first if there is none. The caller holds c.mu.
func (c *conn) session(ctx context.Context) (*sdk.ClientSession, error) {
	if c.closed {
		return nil, errClosed
	}
	if c.sess != nil {
		return c.sess, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	// The HTTP transports keep the context they connect with for the session's stream, so
	// the session gets one of its own, which lives as long as the conn; only a connection
	// still in progress when ctx ends is cut off by it.
	sessCtx, cancelSess := context.WithCancel(c.life)
	stopCut := context.AfterFunc(ctx, cancelSess)

	client := sdk.NewClient(&sdk.Implementation{Name: "agentd", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		// The SDK may run this while a request of ours waits for its answer, so it takes
		// no lock.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			c.listChanged.Store(true)
			c.changed()
		},
	})
	transport, err := c.transport()
	if err != nil {
		return nil, err
	}
	sess, err := client.Connect(sessCtx, transport, nil)
	if !stopCut() || err != nil {
		cancelSess()
		if sess != nil {
			_ = sess.Close()
		}
		c.reap()
		if err == nil {
			err = ctx.Err()
		}
		return nil, explain(ctx, "connect", err, c.stderr)
	}
	c.sess, c.stale = sess, true
	go c.watch(sess)
	c.log.Info("mcp server connected", "transport", string(c.spec.Transport))
	return sess, nil
}

// watch forgets sess once it ends (the process died, the server hung up), so that the next
// use connects again.
func (c *conn) watch(sess *sdk.ClientSession) {
	_ = sess.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != sess {
		return
	}
	c.sess, c.stale = nil, true
	_ = sess.Close()
	c.reap()
	if !c.closed {
		c.log.Warn("mcp server session ended; it is connected again on its next use")
	}
}

// explain wraps a connection or request error with what the server printed on stderr, and
// says so plainly when the time bound ran out.
func explain(ctx context.Context, op string, err error, stderr *tail) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out: %w", context.DeadlineExceeded)
	}
	if stderr != nil {
		if s := stderr.String(); s != "" {
			return fmt.Errorf("%s: %w (stderr: %s)", op, err, s)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// transport builds the SDK transport for the server. For a stdio server it prepares the
// process, which Connect starts.
func (c *conn) transport() (sdk.Transport, error) {
	switch c.spec.Transport {
	case Stdio:
		cmd := exec.Command(c.spec.Command, c.spec.Args...)
		cmd.Dir = c.opts.Dir
		cmd.Env = stdioEnv(c.opts.BaseEnv, c.spec.Env)
		// Its own process group, so that stopping the server stops what it started too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.opts.Credential}
		c.stderr = newTail(2048)
		cmd.Stderr = c.stderr
		c.cmd = cmd
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: stdioGrace}, nil
	case SSE:
		return &sdk.SSEClientTransport{Endpoint: c.spec.URL, HTTPClient: c.httpClient()}, nil
	case SHTTP:
		return &sdk.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: c.httpClient(), MaxRetries: 1}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", c.spec.Transport)
}

// reap kills what is left of a stdio server's process group. The caller holds c.mu.
func (c *conn) reap() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	c.cmd = nil
}

// close ends the session and the server's processes. It is safe to call more than once.
func (c *conn) close() {
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.sess != nil {
		_ = c.sess.Close()
		c.sess = nil
	}
	c.reap()
}

// httpClient sends the API key, if any, as a bearer token.
func (c *conn) httpClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if c.spec.APIKey == "" {
		return &http.Client{Transport: base}
	}
	return &http.Client{Transport: bearer{key: c.spec.APIKey, next: base}}
}

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// stdioEnv is the base variables a stdio server may see, then its own.
func stdioEnv(base []string, own map[string]string) []string {
	keep := map[string]bool{}
	for _, n := range BaseEnvNames {
		keep[n] = true
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, overridden := own[k]; keep[k] && !overridden {
			env = append(env, kv)
		}
	}
	for k, v := range own {
		env = append(env, k+"="+v)
	}
	return env
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// list returns the server's tools, listing them again if they changed since last time. With
// retry false, a server without a session is not connected again: its last failure stands,
// or, if it was listed before, its last tools (its next call connects it again).
func (c *conn) list(ctx context.Context, retry bool) ([]*sdk.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listChanged.Swap(false) {
		c.stale = true
	}
	if !retry && c.sess == nil && !c.closed {
		switch {
		case c.failed != nil:
			return nil, c.failed
		case c.tools != nil:
			return c.tools, nil
		}
	}
	tools, err := c.listLocked(ctx)
	c.failed = err
	return tools, err
}

// listLocked is list's connection and listing. The caller holds c.mu.
func (c *conn) listLocked(ctx context.Context) ([]*sdk.Tool, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	if !c.stale {
		return c.tools, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	tools := []*sdk.Tool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, explain(ctx, "list tools", err, c.stderr)
		}
		tools = append(tools, t)
	}
	c.tools, c.stale = tools, false
	return tools, nil
}

// call calls one tool within the server's time bound.
func (c *conn) call(ctx context.Context, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	c.mu.Lock()
	sess, err := c.session(ctx)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.callTimeout(c.spec))
	defer cancel()
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, explain(ctx, "call", err, nil)
	}
	return res, nil
}
