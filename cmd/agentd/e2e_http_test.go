package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const httpAdminKey = "e2e-http-admin-key-0123456789"

// rawRequest sends request on a new connection and reads the answer, which must carry a JSON
// detail, and then the end of the connection. Reads are bounded by a generous deadline.
func rawRequest(t *testing.T, s *server, request string) (status int, detail string) {
	t.Helper()
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the answer to %.40q: %v", request, err)
	}
	defer resp.Body.Close()
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d (%s) to %.40q is not JSON: %v", resp.StatusCode, resp.Header.Get("Content-Type"), request, err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("after the answer to %.40q the connection did not close: %v", request, err)
	}
	return resp.StatusCode, d.Detail
}

// TestHTTPServerHolds: the binary's HTTP server answers what it cannot parse, slow bodies
// and unclean paths with a JSON detail, and closes those connections.
func TestHTTPServerHolds(t *testing.T) {
	t.Parallel()
	s := startServer(t, newDataDir(t), testEnv("AGENTD_ADMIN_KEY="+httpAdminKey, "AGENTD_REQUEST_BODY_TIMEOUT=1s"))
	for _, tc := range []struct {
		name, request string
		status        int
		detail        string
	}{
		{"a malformed request line", "GARBAGE\r\n\r\n", 400, "Bad Request: the request line or a header could not be parsed"},
		{"headers too large", "GET /alive HTTP/1.1\r\nHost: agentd\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"an unclean path", "GET /api/../alive HTTP/1.1\r\nHost: agentd\r\nConnection: close\r\n\r\n", 404, "Not Found"},
		{"a slow body", "POST /api/settings HTTP/1.1\r\nHost: agentd\r\nX-Session-API-Key: " + httpAdminKey +
			"\r\nContent-Length: 100\r\n\r\n{\"language\":", 408, "The request body did not arrive in time"},
	} {
		if status, detail := rawRequest(t, s, tc.request); status != tc.status || detail != tc.detail {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, detail, tc.status, tc.detail)
		}
	}
}

// TestUserURLPolicy: the binary refuses a user's loopback llm_base_url unless the
// administrator allows loopback.
func TestUserURLPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		env   []string
		want  int
		check string
	}{
		{"no allow-list", nil, http.StatusUnprocessableEntity, "llm_base_url resolves to 127.0.0.1, a loopback address"},
		{"loopback allowed", []string{"AGENTD_ALLOW_INTERNAL=127.0.0.1"}, http.StatusOK, "Settings stored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, newDataDir(t), testEnv(append(tc.env, "AGENTD_ADMIN_KEY="+httpAdminKey)...))
			alice := s.client(httpAdminKey).newUser("alice")
			status, body := s.client(alice).call("POST", "/api/settings", map[string]any{"llm_base_url": "http://127.0.0.1:11434/v1"})
			if status != tc.want || !strings.Contains(string(body), tc.check) {
				t.Fatalf("POST /api/settings: %d %s, want %d with %q", status, body, tc.want, tc.check)
			}
		})
	}
}
