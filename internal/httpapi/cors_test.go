package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/agentd/agentd/internal/config"
)

func TestCORS(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		origin  string
		ok      bool
	}{
		{"localhost by default", nil, "http://localhost:3001", true},
		{"loopback by default", nil, "http://127.0.0.1:8080", true},
		{"other by default", nil, "https://evil.example", false},
		{"listed", []string{"https://app.example"}, "https://app.example", true},
		{"localhost not listed", []string{"https://app.example"}, "http://localhost:3001", false},
		{"star", []string{"*"}, "https://any.example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *config.Config) { c.CORSOrigins = tc.allowed })
			req, _ := http.NewRequest("OPTIONS", e.srv.URL+"/api/v1/users/me", nil)
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Access-Control-Request-Method", "GET")
			req.Header.Set("Access-Control-Request-Headers", "x-session-api-key")
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("Access-Control-Allow-Origin")
			if tc.ok && (resp.StatusCode != http.StatusNoContent || got != tc.origin) {
				t.Fatalf("preflight: %d, allow-origin %q", resp.StatusCode, got)
			}
			if !tc.ok && got != "" {
				t.Fatalf("origin %s allowed: %q", tc.origin, got)
			}
			// A real request from an allowed origin still needs a key, and its answer is readable.
			req, _ = http.NewRequest("GET", e.srv.URL+"/api/v1/users/me", nil)
			req.Header.Set("Origin", tc.origin)
			resp, err = e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("keyless request from a browser: %d", resp.StatusCode)
			}
			if tc.ok != (resp.Header.Get("Access-Control-Allow-Origin") == tc.origin) {
				t.Fatalf("allow-origin on the answer: %q", resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}
