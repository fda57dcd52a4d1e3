package httpapi

import (
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/wire"
)

// Operators' endpoints: the server's metrics (Prometheus' text format) and Go's profiles,
// for admins on the API, and without a key on the admin listener (Deps.Metrics, AdminHandler),
// which an operator keeps off the public network.

// Metrics records the requests the API serves and serves the server's metrics. Its methods
// are called from many goroutines at once.
type Metrics interface {
	// ObserveRequest records one answered request: the route's pattern ("unmatched" for a
	// path no route has), the method, the status and the time it took.
	ObserveRequest(route, method string, status int, d time.Duration)
	// Handler serves the metrics in Prometheus' text format.
	Handler() http.Handler
}

type noMetrics struct{}

func (noMetrics) ObserveRequest(string, string, int, time.Duration) {}
func (noMetrics) Handler() http.Handler                             { return http.NotFoundHandler() }

// metrics serves the server's metrics to admins.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) error {
	if !caller(r).IsAdmin {
		return auth.ErrForbidden
	}
	a.d.Metrics.Handler().ServeHTTP(w, r)
	return nil
}

// pprofPrefix is where Go's profiles are served.
const pprofPrefix = "/debug/pprof/"

// profiles serves net/http/pprof's handlers under pprofPrefix.
func profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPrefix, pprof.Index) // the index, and every named profile (heap, goroutine, …)
	mux.HandleFunc(pprofPrefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPrefix+"profile", pprof.Profile)
	mux.HandleFunc(pprofPrefix+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPrefix+"trace", pprof.Trace)
	return mux
}

// adminProfiles is profiles behind an admin's key, on the API.
func (a *API) adminProfiles() http.Handler {
	p := profiles()
	return a.wrap(route{op: wire.Operation{Method: "GET", Path: pprofPrefix}, h: func(w http.ResponseWriter, r *http.Request) error {
		if !caller(r).IsAdmin {
			return auth.ErrForbidden
		}
		p.ServeHTTP(w, r)
		return nil
	}})
}

// AdminHandler serves the admin listener: /metrics, Go's profiles under /debug/pprof/, and
// the health routes, without a key. Its requests are logged and carry request ids as the
// API's do, but are not counted in the request metrics.
func (a *API) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.d.Metrics.Handler())
	mux.Handle(pprofPrefix, profiles())
	for _, rt := range a.agentBaseOnly() {
		mux.Handle(rt.op.Method+" "+rt.op.Path, a.wrap(rt))
	}
	mux.Handle("GET /alive", a.wrap(route{op: wire.Operation{Public: true}, h: a.alive}))
	mux.Handle("/", a.wrap(route{h: func(w http.ResponseWriter, r *http.Request) error {
		return errNotFoundRoute
	}, op: wire.Operation{Public: true}}))
	return a.requestIDs(a.recoverer(a.logRequestsAs(false, cleanPaths(mux))))
}

// routeLabel is the route of a request as its mux matched it: its pattern without the
// method, or "unmatched".
func routeLabel(pattern string) string {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	if pattern == "" || pattern == "/" {
		return "unmatched"
	}
	return pattern
}
