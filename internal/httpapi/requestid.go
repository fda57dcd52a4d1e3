package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/logctx"
)

// requestIDHeader carries a request's id: taken from the request when it is sane (a proxy
// in front may have named the request already), made up otherwise, and always echoed in the
// answer. Every line the server logs for the request names it.
const requestIDHeader = "X-Request-ID"

// maxRequestIDLen bounds an incoming request id.
const maxRequestIDLen = 128

// requestIDs gives every request an id, in the answer's X-Request-ID header and in the
// attributes of the lines logged for it (see logctx).
func (a *API) requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := r.Header.Get(requestIDHeader)
		if !saneRequestID(rid) {
			rid = id.New()
		}
		w.Header().Set(requestIDHeader, rid)
		next.ServeHTTP(w, r.WithContext(logctx.With(r.Context(), slog.String("request_id", rid))))
	})
}

// saneRequestID reports whether an incoming id may stand in the log and the answer: 1 to
// maxRequestIDLen letters, digits and the marks - _ . : / + = (which UUIDs, trace ids and
// base64 use), nothing that could forge a log line or a header.
func saneRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/', c == '+', c == '=':
		default:
			return false
		}
	}
	return true
}

// logPathIDs adds the conversation and sandbox of a request's path to the attributes of its
// log lines.
func logPathIDs(r *http.Request) {
	var attrs []slog.Attr
	if v := r.PathValue("conversation_id"); v != "" {
		attrs = append(attrs, slog.String("conversation_id", v))
	}
	if v := r.PathValue("sandbox_id"); v != "" {
		attrs = append(attrs, slog.String("sandbox_id", v))
	}
	if len(attrs) > 0 {
		logctx.Add(r.Context(), attrs...)
	}
}
