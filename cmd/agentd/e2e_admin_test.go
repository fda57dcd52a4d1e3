package main_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

const adminListenerKey = "e2e-admin-listener-key-0123456789"

// TestAdminListener: with --admin-addr the binary serves its metrics and profiles there
// without a key, and on the API only to the admin; every answer carries a request id.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	s := startServer(t, newDataDir(t), testEnv("AGENTD_ADMIN_KEY="+adminListenerKey), "--admin-addr", "127.0.0.1:0")
	admin := s.logged("admin_addr")
	if admin == "" || admin == "off" {
		t.Fatalf("the admin listener's address is not logged: %q", admin)
	}
	get := func(url, key string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("X-Session-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b), resp.Header
	}
	if status, _, h := get(s.url+"/api/v1/users/me", adminListenerKey); status != http.StatusOK || h.Get("X-Request-ID") == "" {
		t.Fatalf("GET /api/v1/users/me: %d, request id %q", status, h.Get("X-Request-ID"))
	}
	if status, _, _ := get(s.url+"/metrics", ""); status != http.StatusUnauthorized {
		t.Fatalf("/metrics without a key on the API: %d, want 401", status)
	}
	status, body, _ := get("http://"+admin+"/metrics", "")
	if status != http.StatusOK || !strings.Contains(body, `agentd_http_requests_total{method="GET",route="/api/v1/users/me",status="200"} 1`) {
		t.Fatalf("admin listener /metrics: %d\n%.2000s", status, body)
	}
	if status, body, _ := get("http://"+admin+"/debug/pprof/goroutine?debug=1", ""); status != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("admin listener goroutine profile: %d %.200s", status, body)
	}
}
