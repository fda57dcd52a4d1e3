package httpapi

import (
	"net/http"
	"runtime/debug"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

type handler func(w http.ResponseWriter, r *http.Request) error

// wrap turns a route's handler into an http.Handler: a bound on the body's size and arrival
// time, authentication (unless public), and error mapping.
func (a *API) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(maxBodyBytes)
		if rt.op.FileField != "" {
			limit = a.d.MaxUploadBytes + multipartSlack
		}
		limitBody(w, r, a.d.BodyTimeout, limit)
		logPathIDs(r)
		if !rt.op.Public {
			u, err := a.authenticate(r, rt.op)
			if err != nil {
				a.writeError(w, r, err)
				return
			}
			r = r.WithContext(auth.WithUser(r.Context(), u))
			if rw, ok := w.(*statusRecorder); ok {
				rw.userID = u.ID
			}
		}
		if err := rt.h(w, r); err != nil {
			a.writeError(w, r, err)
		}
	})
}

func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body, internal := mapError(err)
	if internal {
		a.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, body)
}

// statusRecorder remembers the status for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	userID string
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (WebSocket upgrades hijack it).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets streaming handlers flush through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logRequests logs one line per request and counts it in the metrics. Only the path is
// logged: query strings may carry keys.
func (a *API) logRequests(next http.Handler) http.Handler { return a.logRequestsAs(true, next) }

// logRequestsAs logs one line per request, and counts it in the request metrics when count
// is set. The route is the pattern the mux below matched, which it sets on r.
func (a *API) logRequestsAs(count bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		if rec.status == 0 {
			rec.status = http.StatusOK // a handler that wrote nothing
		}
		if count {
			a.lastSeen.Store(a.d.Now().UnixNano())
			a.d.Metrics.ObserveRequest(routeLabel(r.Pattern), r.Method, rec.status, d)
		}
		a.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", float64(d.Microseconds())/1000, "user_id", rec.userID)
	})
}

// recoverer turns a panic into a logged 500 so one bad request cannot take the server down.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.ErrorContext(r.Context(), "panic in handler", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeJSON(w, http.StatusInternalServerError, detail("Internal Server Error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
