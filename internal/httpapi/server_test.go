package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/httpapi"
)

// rawAnswer is what the server answered a raw request, and whether it closed the connection
// after the answer.
type rawAnswer struct {
	status int
	header http.Header
	detail string
	closed bool
}

// raw sends a request on a new connection, in pieces written one after the other, reads
// the answer and sees whether the server closes the connection after it. Every read is
// bounded by a generous deadline, so a server that neither answers nor closes fails the test
// instead of hanging it.
func (e *env) raw(pieces ...string) rawAnswer {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	for _, p := range pieces {
		if _, err := io.WriteString(conn, p); err != nil {
			e.t.Fatalf("send: %v", err)
		}
	}
	request := strings.Join(pieces, "")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		e.t.Fatalf("read the answer to %.40q: %v", request, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		e.t.Fatalf("read the answer's body: %v", err)
	}
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &d); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		e.t.Fatalf("answer %d %q (%s) to %.40q is not JSON: %v", resp.StatusCode, body, resp.Header.Get("Content-Type"), request, err)
	}
	_, err = br.ReadByte()
	return rawAnswer{status: resp.StatusCode, header: resp.Header, detail: d.Detail, closed: err == io.EOF}
}

// TestSlowBody: a body that does not arrive within the body timeout is answered 408 and its
// connection closed; nothing of it is stored.
func TestSlowBody(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.RequestBodyTimeout = time.Second })
	head := "POST /api/settings HTTP/1.1\r\nHost: agentd\r\nX-Session-API-Key: " + adminKey +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
	timedOut := rawAnswer{status: http.StatusRequestTimeout, detail: "The request body did not arrive in time", closed: true}
	for _, tc := range []struct {
		name, request string
		want          rawAnswer
	}{
		{"part of the body", head + `{"language": "en", `, timedOut},
		{"none of the body", head, timedOut},
		{"a chunked body", strings.Replace(head, "Content-Length: 100", "Transfer-Encoding: chunked", 1) + "5\r\n{\"lan\r\n", timedOut},
		// The key is checked before the body is read, and the body left unread is bounded
		// in time as well: the connection closes.
		{"a wrong key", strings.Replace(head, adminKey, "wrong-key", 1), rawAnswer{status: http.StatusUnauthorized, detail: "Unauthorized", closed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			if got := e.raw(tc.request); got.status != tc.want.status || got.detail != tc.want.detail || !got.closed {
				t.Fatalf("answer %+v, want %+v", got, tc.want)
			}
		})
	}
	if status, body := e.call("GET", "/api/settings", adminKey, nil); status != http.StatusNotFound {
		t.Fatalf("settings after slow bodies: %d %s, want none stored", status, body)
	}
	// A body that arrives in time, even in two pieces, is served.
	body := `{"language": "en"}`
	got := e.raw("POST /api/settings HTTP/1.1\r\nHost: agentd\r\nX-Session-API-Key: "+adminKey+
		"\r\nConnection: close\r\nContent-Length: 18\r\n\r\n"+body[:5], body[5:])
	if got.status != http.StatusOK || got.detail != "" {
		t.Fatalf("a body in two pieces: %+v", got)
	}
}

// TestRefusalsAreJSON: the answers net/http gives by itself, to requests it cannot read,
// carry a JSON detail as every other answer does.
func TestRefusalsAreJSON(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, request string
		status        int
		detail        string
	}{
		{"a malformed request line", "GARBAGE\r\n\r\n", 400, "Bad Request: the request line or a header could not be parsed"},
		{"a malformed header", "GET /alive HTTP/1.1\r\nHost: agentd\r\nno colon here\r\n\r\n", 400, "Bad Request: the request line or a header could not be parsed"},
		{"no Host", "GET /alive HTTP/1.1\r\n\r\n", 400, "Bad Request: missing required Host header"},
		{"headers too large", "GET /alive HTTP/1.1\r\nHost: agentd\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"an unknown transfer encoding", "POST /api/settings HTTP/1.1\r\nHost: agentd\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "Unsupported transfer encoding"},
		{"an unknown HTTP version", "GET /alive HTTP/2.5\r\nHost: agentd\r\n\r\n", 505, "HTTP Version Not Supported: unsupported protocol version"},
		{"an unknown expectation", "POST /api/settings HTTP/1.1\r\nHost: agentd\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417,
			`Expectation Failed: the only expectation supported is "Expect: 100-continue"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			got := e.raw(tc.request)
			if got.status != tc.status || got.detail != tc.detail || !got.closed {
				t.Fatalf("answer %+v, want %d %q and the connection closed", got, tc.status, tc.detail)
			}
		})
	}
}

// TestUncleanPaths: a path with "..", "." or "//" elements, as sent or once unescaped, is a
// 404, not the ServeMux's redirect to the cleaned path.
func TestUncleanPaths(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/api/../alive", "/./alive", "//alive", "/api/v1//users/me", "/api/v1/users/me/..",
		"/api/v1/%2e%2e/%2e%2e/alive", "/api/v1/users%2f..%2f..%2falive", "/alive/."} {
		got := e.raw("GET " + path + " HTTP/1.1\r\nHost: agentd\r\nConnection: close\r\nX-Session-API-Key: " + adminKey + "\r\n\r\n")
		if got.status != http.StatusNotFound || got.detail != "Not Found" || got.header.Get("Location") != "" {
			t.Errorf("GET %s: %+v, want a 404 without a Location", path, got)
		}
	}
	if got := e.raw("GET /alive HTTP/1.1\r\nHost: agentd\r\nConnection: close\r\n\r\n"); got.status != http.StatusOK {
		t.Errorf("GET /alive: %+v", got)
	}
}

// TestRefusalsLeaveHandlersAlone: an answer a handler writes is never taken for one of
// net/http's own refusals, even when it looks like one.
func TestRefusalsLeaveHandlersAlone(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "400 Bad Request", http.StatusBadRequest)
	}), nil)
	srv.Listener = httpapi.JSONRefusals(srv.Listener)
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || string(body) != "400 Bad Request\n" {
		t.Fatalf("answer %d %s %q, want the handler's own", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
