// Package httpapi is agentd's HTTP interface: the route table, one file per resource, one
// mapping from domain errors to statuses, and the middleware (authentication, panic recovery,
// request log). Handlers decode, validate, call one service method and encode.
package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store/listingcache"
	"github.com/agentd/agentd/internal/webhook"
	"github.com/agentd/agentd/internal/wire"
)

// Deps are the services the API calls.
type Deps struct {
	Auth          *auth.Service
	Conversations *conversation.Service
	Sandboxes     *sandbox.Service
	Settings      *settings.Service
	GitProviders  *gitprovider.Service
	Skills        *skill.Service
	CustomSecrets *customsecret.Service
	Webhooks      *webhook.Service
	// Open unseals values the store keeps sealed (sandbox session keys).
	Open   func(sealed []byte) ([]byte, error)
	Logger *slog.Logger
	// PublicURL is the base URL clients reach this server at.
	PublicURL string
	// AgentServerURL is the base URL clients reach the agent-server base (AgentServer) at;
	// conversation URLs and AGENT_SERVER URLs start with it. Empty: there is no such base,
	// and those URLs lead to the /agent-server/<sandbox id> prefix of this server.
	AgentServerURL string
	Version        string
	// DefaultModel is the server-wide model (AGENTD_LLM_MODEL), offered to clients beside
	// the models agentd knows; empty when there is none.
	DefaultModel string
	// SpecWarnings says what the active sandbox backend cannot honour for a spec.
	SpecWarnings func(sandbox.Spec) []string
	// CORSOrigins are the browser origins allowed to call the API (see config).
	CORSOrigins []string
	// Sockets tune the WebSockets.
	Sockets SocketOptions
	// Checks are what /health and /ready check (the store, the sandbox backend).
	Checks []Check
	// Now is the clock of the readiness cache; nil means time.Now.
	Now func() time.Time
	// URLs is the policy for URLs users supply (llm_base_url); nil means the policy without
	// an allow-list.
	URLs *netpolicy.Policy
	// BodyTimeout bounds the time a request body takes to arrive; zero means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxUploadBytes bounds a file uploaded into a workspace; zero means
	// DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// Metrics records the requests and serves /metrics; nil records nothing, and /metrics
	// answers 404.
	Metrics Metrics
	// Web is the web app, served at every path outside the API's (/api/, /agent-server/,
	// /sockets/); nil serves none.
	Web http.Handler
	// EncodedCacheBytes bounds the conversations and start tasks that the listings keep as
	// they encoded them; 0 or less keeps none.
	EncodedCacheBytes int64
}

// API serves every HTTP endpoint of agentd serve. Close ends its WebSockets.
type API struct {
	d       Deps
	log     *slog.Logger
	handler http.Handler
	// agentHandler serves the agent-server base.
	agentHandler http.Handler
	// openapi builds the OpenAPI document on its first request: generating it walks every
	// wire type and allocates several megabytes, which a server that is never asked for it
	// should not pay at every start.
	openapi func() ([]byte, error)
	sockets *sockets
	keys    keyCache
	ready   *readiness
	// decodedMetrics keeps the conversations' metrics as lately decoded (convert.go).
	decodedMetrics metricsCache
	// encoded keeps the conversations and start tasks as the listings lately encoded them,
	// by their versions (writeListed): a listing answers a
	// hundred of them, most of which it answered as they are now before, and encoding them
	// was most of its time. Nil keeps none.
	encoded *listingcache.Cache
	// started and lastSeen (unix nanoseconds of the last request) answer /server_info.
	started  time.Time
	lastSeen atomic.Int64
}

// New builds the API.
func New(d Deps) (*API, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.SpecWarnings == nil {
		d.SpecWarnings = func(sandbox.Spec) []string { return nil }
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.URLs == nil {
		d.URLs, _ = netpolicy.New(nil) // an empty allow-list cannot be wrong
	}
	if d.BodyTimeout <= 0 {
		d.BodyTimeout = DefaultBodyTimeout
	}
	if d.Metrics == nil {
		d.Metrics = noMetrics{}
	}
	if d.MaxUploadBytes <= 0 {
		d.MaxUploadBytes = DefaultMaxUploadBytes
	}
	a := &API{d: d, log: d.Logger, sockets: newSockets(d.Sockets),
		ready:   &readiness{checks: d.Checks, now: d.Now, failing: map[string]bool{}},
		started: d.Now().UTC(), encoded: listingcache.New(d.EncodedCacheBytes)}
	a.lastSeen.Store(a.started.UnixNano())
	a.openapi = sync.OnceValues(OpenAPI)
	mux := http.NewServeMux()
	rts := a.routes()
	for _, rt := range rts {
		h := a.wrap(rt)
		mux.Handle(rt.op.Method+" "+rt.op.Path, h)
	}
	// The event socket authenticates itself, after the upgrade when the key comes in the
	// first frame, so it stays out of the route table (see eventsocket.go).
	mux.HandleFunc("GET "+agentSocket, a.eventSocket)
	mux.Handle("GET "+agentBashSocket, a.bashSocketRoute())
	mux.Handle("/", a.wrap(route{h: func(w http.ResponseWriter, r *http.Request) error {
		if a.d.Web != nil && !apiPath(r.URL.Path) {
			a.d.Web.ServeHTTP(w, r)
			return nil
		}
		return errNotFoundRoute
	}, op: wire.Operation{Public: true}}))
	mux.Handle(pprofPrefix, a.adminProfiles())
	a.handler = a.requestIDs(a.recoverer(a.logRequests(a.cors(cleanPaths(mux)))))
	a.agentHandler = a.agentBaseHandler(rts)
	return a, nil
}

// apiPath reports whether a path is in the API's part of the server, where an unknown path
// is a JSON 404 rather than a page of the web app.
func apiPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/agent-server/") || strings.HasPrefix(p, "/sockets/")
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// ReleaseMemory empties the caches that listings fill: the sandbox session keys opened (which
// are secrets, better not kept while nobody asks for them), the conversations encoded (which
// hold those keys) and the metrics decoded. The next listings fill them again.
func (a *API) ReleaseMemory() {
	a.keys.clear()
	a.encoded.Clear()
	a.decodedMetrics.clear()
}
