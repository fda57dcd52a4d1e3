package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
	"github.com/agentd/agentd/internal/httpapi"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// The test binary doubles as `agentd runtime` for the sandboxes these tests start.
func TestMain(m *testing.M) { sandboxtest.RuntimeMainWith(m, pgtest.Run) }

const adminKey = "test-admin-key-0123456789"

// env is a whole agentd serve (SQLite, process sandboxes, every service) behind an httptest
// server, built by the same app.New the binary uses. A subtest takes its own view of the env
// (in), so that the helpers report a failure to the test that made the call.
type env struct {
	*envState
	// t is the test the helpers report to and register cleanups with.
	t *testing.T
}

// in returns the view of the env for t, a subtest of the env's test: the same server, data
// and doubles.
func (e *env) in(t *testing.T) *env { return &env{envState: e.envState, t: t} }

// envState is what every view of an env shares.
type envState struct {
	cfg     config.Config
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	// agentSrv serves the agent-server base when the env was made withAgentServer.
	agentSrv     *httptest.Server
	agentHandler atomic.Pointer[http.Handler]
	app          *apptest.Server
	backend      *process.Backend
	// wrapBackend, if set, wraps the backend the next start gives the app.
	wrapBackend func(sandbox.Backend) sandbox.Backend
	// agent tunes the agent loop of the app (iteration limit, condensation).
	agent conversation.AgentOptions
	// sockets tunes the app's WebSockets (timeouts).
	sockets httpapi.SocketOptions
	// watchInterval is how often the sandbox service looks for vanished sandboxes (0: 100 ms).
	watchInterval time.Duration
	// sandboxClock is the sandbox service's clock: the real time until a test advances it.
	sandboxClock *offsetClock
	// providers are the git providers' APIs the server is configured with, on loopback.
	providers map[string]*providertest.Server
	tokens    map[[2]string]string // API key, provider → the token stored for that user
	repos     map[string]bool      // provider/repository made at the doubles
	// git is the git provider of the conversations' repositories; nil means the server
	// offers none.
	git *gittest.Server
	// logs holds what the server logged.
	logs *logBuffer
	// sendBuffer, when positive, is the kernel's send buffer (bytes) of each connection the
	// server accepts from then on: a client that stops reading stalls its stream soon.
	sendBuffer atomic.Int64
}

// sendBufferListener gives the connections it accepts the env's send buffer.
type sendBufferListener struct {
	net.Listener
	e *env
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if n := l.e.sendBuffer.Load(); err == nil && n > 0 {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(int(n))
		}
	}
	return c, err
}

// logBuffer collects the server's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// offsetClock is the real time plus an offset that a test moves forward, so that a test
// decides when a sandbox has been idle for long enough, whatever the machine's speed.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

type envOption func(*config.Config)

// withAgentServer serves the agent-server base on a second test server, as agentd serve
// does on its second listener.
func withAgentServer(c *config.Config) { c.AgentServerAddr = "on" }

// withPool keeps one sandbox of the default spec warm.
func withPool(c *config.Config) { c.SandboxPools = map[string]int{"": 1} }

// withStore runs the server on the data directory dir and database (sqlite, or a PostgreSQL
// URL), as a server started again elsewhere would.
func withStore(dir, database string) envOption {
	return func(c *config.Config) { c.DataDir, c.Database = dir, database }
}

// withTitles names conversations as agentd serve does by default: the model writes titles.
func withTitles(c *config.Config) { c.ConversationTitles = "model" }

// newEnv starts a server whose git provider makes any repository a conversation names.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	git := gittest.Start(t, "ghp_default-provider-token-0123456789")
	git.AutoCreate()
	return newEnvGit(t, git, opts...)
}

// newEnvGit starts a server with git as the git provider of its conversations' repositories
// (nil: none).
func newEnvGit(t *testing.T, git *gittest.Server, opts ...envOption) *env {
	t.Helper()
	// A short directory: sandbox socket paths under it must fit a unix socket address.
	dir := sandboxtest.ShortDir(t)
	cfg, err := config.Load([]string{"--data-dir", dir, "--admin-key", adminKey, "--sandbox-backend", "process"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// The default spec runs the test binary as the runtime.
	cfg.Specs = []config.SpecConfig{{ID: "default", InitialEnv: map[string]string{sandboxtest.EnvRuntime: "1"}}}
	// A server-wide model that answers every request with a short text, so that conversations
	// can be created; tests of the agent point users' settings at scripted servers instead.
	cfg.LLMModel, cfg.LLMBaseURL, cfg.LLMAPIKey = "gpt-4o", defaultLLM(t), "sk-default-llm"
	// The agent-server base is off unless a test asks for it (withAgentServer): conversation
	// URLs then lead to the prefix of the one test server.
	cfg.AgentServerAddr, cfg.AgentServerPublicURL = "", ""
	// Conversations keep their first title unless a test asks for titles (withTitles): a
	// title call would take a step of the scripted models, in any order beside the agent's.
	cfg.ConversationTitles = "off"
	// Test clients read their sockets only when a test looks, and a ping left unanswered
	// until the next cuts a socket off: pings are rare unless a test asks for them.
	cfg.StreamHeartbeat = 2 * time.Minute
	// Sandboxes start cold unless a test asks for a warm pool (withPool): whether a start is
	// served from the pool would otherwise depend on how far the pool has filled.
	cfg.SandboxPools = nil
	// Users' scripted models listen on loopback, as an operator's local model server would:
	// the administrator allows it, as that operator would.
	cfg.AllowInternal = []string{"127.0.0.0/8"}
	// The public git providers are loopback doubles, reached as the internet ones would be.
	providers := map[string]*providertest.Server{
		"github": providertest.NewGitHub(t), "gitlab": providertest.NewGitLab(t), "bitbucket": providertest.NewBitbucket(t)}
	cfg.GitHubAPIURL, cfg.GitLabAPIURL, cfg.BitbucketAPIURL = providers["github"].APIURL(), providers["gitlab"].APIURL(), providers["bitbucket"].APIURL()
	for _, o := range opts {
		o(&cfg)
	}
	e := &env{t: t, envState: &envState{cfg: cfg, sandboxClock: &offsetClock{}, providers: providers,
		tokens: map[[2]string]string{}, repos: map[string]bool{}, git: git, logs: &logBuffer{}}}
	if cfg.AgentServerAddr != "" {
		e.agentSrv = httptest.NewUnstartedServer(nil)
		e.agentSrv.Config = httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			(*e.agentHandler.Load()).ServeHTTP(w, r)
		}), nil)
		e.agentSrv.Listener = httpapi.JSONRefusals(e.agentSrv.Listener)
		e.agentSrv.Start()
		t.Cleanup(e.agentSrv.Close)
		e.cfg.AgentServerAddr, e.cfg.AgentServerPublicURL = e.agentSrv.Listener.Addr().String(), e.agentSrv.URL
	}
	// The HTTP server and listener are agentd serve's own, around a handler a restart swaps.
	e.srv = httptest.NewUnstartedServer(nil)
	e.srv.Config = httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*e.handler.Load()).ServeHTTP(w, r)
	}), nil)
	e.srv.Listener = httpapi.JSONRefusals(sendBufferListener{e.srv.Listener, e})
	e.srv.Start()
	// Registered before the app starts, so that a start that fails half-way is cleaned up too.
	t.Cleanup(func() {
		e.srv.Close()
		e.stop()
		e.destroySandboxes()
		sandboxtest.CheckNoChildren(t)
	})
	e.start()
	return e
}

// destroySandboxes destroys every sandbox of the env's data directory: nothing a test
// started may outlive it.
func (e *env) destroySandboxes() {
	b := e.newBackend()
	insts, _ := b.List(context.Background())
	for _, inst := range insts {
		// A destroy that fails leaves its runtime to no reaper: say why, before the check for
		// children finds it.
		if err := b.Destroy(context.Background(), inst); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	b.Close()
}

func (e *env) newBackend() *process.Backend {
	b, err := process.New(process.Options{Root: filepath.Join(e.cfg.DataDir, "sandboxes", "process"), Binary: sandboxtest.Binary(e.t)})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// start opens the app on the data directory (as `agentd serve` does at start-up).
func (e *env) start() {
	e.t.Helper()
	e.backend = e.newBackend()
	watch := e.watchInterval
	if watch == 0 {
		watch = 100 * time.Millisecond
	}
	var backend sandbox.Backend = e.backend
	if e.wrapBackend != nil {
		backend = e.wrapBackend(backend)
	}
	o := app.Options{Config: e.cfg, Backend: backend, Version: "test",
		LLMRetry: fastRetry, Agent: e.agent, SandboxWatchInterval: watch,
		// A claim's hold on the pool's refill never ends by its time: a pool that fills
		// again shows that its conversation's start let it go (TestConversationFromWarmPool).
		SandboxPoolHold: time.Hour,
		SandboxNow:      e.sandboxClock.Now, Sockets: e.sockets,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if e.git != nil {
		o.GitRemotes = e.git
	}
	a, err := apptest.Start(context.Background(), o)
	if err != nil {
		e.backend.Close()
		e.t.Fatal(err)
	}
	e.app = a
	h := a.Handler()
	e.handler.Store(&h)
	if e.agentSrv != nil {
		ah := a.AgentServerHandler()
		e.agentHandler.Store(&ah)
	}
}

// stop closes the app; sandboxes keep running, as when the server stops.
func (e *env) stop() {
	if e.app != nil {
		e.app.Close()
		e.backend.Close()
		e.app = nil
	}
}

// restart stops the server and starts a new one on the same data directory and address.
func (e *env) restart() {
	e.stop()
	e.start()
}

// call sends a request and returns the status and body. body may be nil, a string (sent as
// is) or any value (sent as JSON). An empty key sends no key.
func (e *env) call(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Session-API-Key", key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// must sends a request, fails the test unless the status is want, and decodes the body into
// out (when out is not nil).
func (e *env) must(method, path, key string, body any, want int, out any) []byte {
	e.t.Helper()
	status, data := e.call(method, path, key, body)
	if status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

// newUser creates a user through the admin API and returns its id and a key.
func (e *env) newUser(name string) (id, key string) {
	e.t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/users", adminKey, map[string]any{"name": name}, http.StatusCreated, &u)
	var k struct {
		Key string `json:"key"`
	}
	e.must("POST", "/api/keys", adminKey, map[string]any{"name": name + "-key", "user_id": u.ID}, http.StatusCreated, &k)
	return u.ID, k.Key
}

// eventuallyWait bounds eventually: long enough for an agent's whole run on a machine that
// runs the suite beside other load (30 s was not, beside stress-ng and more), short enough
// that a condition that never holds fails the test within minutes.
const eventuallyWait = 2 * time.Minute

// eventually polls cond every few milliseconds until it holds or eventuallyWait passes; a
// seen function, if given, says in the failure what was seen last.
func (e *env) eventually(what string, cond func() bool, seen ...func() string) {
	e.t.Helper()
	deadline := time.Now().Add(eventuallyWait)
	for !cond() {
		if time.Now().After(deadline) {
			last := ""
			for _, f := range seen {
				last += "; " + f()
			}
			e.t.Fatalf("timed out after %v waiting for %s%s", eventuallyWait, what, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sandboxStatus reads a sandbox's status through the API.
func (e *env) sandboxStatus(key, id string) string {
	e.t.Helper()
	var list []*struct {
		Status string `json:"status"`
	}
	e.must("GET", "/api/v1/sandboxes?id="+id, key, nil, http.StatusOK, &list)
	if len(list) != 1 || list[0] == nil {
		return ""
	}
	return list[0].Status
}

// waitSandbox waits until the sandbox has the status.
func (e *env) waitSandbox(key, id, status string) {
	e.t.Helper()
	last := ""
	e.eventually("sandbox "+id+" "+status, func() bool {
		last = e.sandboxStatus(key, id)
		return last == status
	}, func() string { return "it is " + last })
}
