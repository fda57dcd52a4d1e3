package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// MaxHeaderBytes bounds a request's header section; net/http answers a longer one 431.
const MaxHeaderBytes = 64 << 10

// NewServer returns the HTTP server agentd serves the API with. Its listener should be
// wrapped by JSONRefusals. A request's headers must arrive within 10 seconds and its body
// within Deps.BodyTimeout (see limitBody); a server-wide ReadTimeout would also cut off the
// WebSockets, which stay open for as long as their clients listen.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// JSONRefusals wraps ln so that the answers net/http writes by itself, when it cannot read
// a request at all (a malformed request line or header, headers over MaxHeaderBytes, a
// missing Host, an unknown transfer encoding) or will not serve it (an Expect header other
// than 100-continue), carry {"detail": ...} as every other answer
// does, instead of plain text. Those answers never reach a handler; net/http writes each in
// one Write, in one fixed form, which the connection rewrites.
func JSONRefusals(ln net.Listener) net.Listener { return refusalListener{ln} }

type refusalListener struct{ net.Listener }

func (l refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c}, nil
}

type refusalConn struct{ net.Conn }

func (c *refusalConn) Write(p []byte) (int, error) {
	if answer, ok := jsonRefusal(p); ok {
		if _, err := c.Conn.Write(answer); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection after a refusal, so that the client
// reads the answer before the connection is reset.
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// plainRefusal is what follows the status line of net/http's own refusals. A handler's
// answer never has it: net/http writes a handler's headers sorted, with a Date among them.
const plainRefusal = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonRefusal rewrites p when it is one of net/http's own refusals, such as
// "HTTP/1.1 400 Bad Request: missing required Host header" + plainRefusal + "400 Bad
// Request: missing required Host header".
func jsonRefusal(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	if bytes.HasPrefix(p, []byte(expectationFailed)) && bytes.HasSuffix(p, []byte("\r\nContent-Length: 0\r\n\r\n")) {
		return jsonAnswer(http.StatusExpectationFailed, `Expectation Failed: the only expectation supported is "Expect: 100-continue"`)
	}
	// The status line ends at the first CRLF; only a refusal has plainRefusal right after it.
	end := bytes.Index(p, []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(p[end:], []byte(plainRefusal)) {
		return nil, false
	}
	status := string(p[len(proto):end])
	code, err := strconv.Atoi(status[:min(3, len(status))])
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	detail := strings.TrimPrefix(string(p[end+len(plainRefusal):]), status[:3]+" ")
	if detail == "Bad Request" {
		detail = "Bad Request: the request line or a header could not be parsed"
	}
	return jsonAnswer(code, detail)
}

// expectationFailed starts net/http's answer to an Expect header other than 100-continue,
// which it writes, without a body, before any handler runs. No handler of the API answers 417.
const expectationFailed = "HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\n"

// jsonAnswer is a whole answer with {"detail": detail} that closes the connection.
func jsonAnswer(code int, detail string) ([]byte, bool) {
	body, err := json.Marshal(map[string]string{"detail": detail})
	if err != nil {
		return nil, false
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(body)+1, body), true
}

// cleanPaths answers 404 to a path that is not in its clean form ("..", ".", "//") as
// written, where the ServeMux would redirect to the cleaned path, or that holds a "." or
// ".." element once unescaped: no route of the API has such a path, and a redirect would
// send a client somewhere it did not ask to go. An escaped slash may stand at the start of
// an element, as in a git route's absolute path (/api/git/changes/%2Fworkspace).
func cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); p != cleanPath(p) || hasDotElement(r.URL.Path) {
			writeJSON(w, http.StatusNotFound, detail("Not Found"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasDotElement reports whether a path has a "." or ".." element.
func hasDotElement(p string) bool {
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "." || elem == ".." {
			return true
		}
	}
	return false
}

// cleanPath is p as the ServeMux cleans it: rooted, without "." and ".." elements or
// repeated slashes, keeping a final slash.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}
