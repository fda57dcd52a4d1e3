package runtimeclient

import "testing"

func TestNewClientEndpoints(t *testing.T) {
	tests := []struct {
		endpoint string
		base     string
		ok       bool
	}{
		{"unix:/run/x.sock", unixBaseURL, true},
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000", true},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000", true},
		{"unix:rel.sock", "", false},
		{"tcp:127.0.0.1:80", "", false},
		{"http://", "", false},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.endpoint, "k")
		if (err == nil) != tt.ok {
			t.Fatalf("NewClient(%q) error %v, want ok=%v", tt.endpoint, err, tt.ok)
		}
		if tt.ok && (c.BaseURL() != tt.base || c.Endpoint() != tt.endpoint) {
			t.Fatalf("NewClient(%q): base %q, endpoint %q", tt.endpoint, c.BaseURL(), c.Endpoint())
		}
	}
}
