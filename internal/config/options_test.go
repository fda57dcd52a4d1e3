package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAllowInternal(t *testing.T) {
	c, err := Load([]string{"--allow-internal", "127.0.0.0/8, ::1,ollama.internal"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.0/8", "::1", "ollama.internal"}; !slices.Equal(c.AllowInternal, want) {
		t.Fatalf("allow internal %q, want %q", c.AllowInternal, want)
	}
	_, err = Load(nil, env(map[string]string{"AGENTD_ALLOW_INTERNAL": "10.0.0.0/33"}))
	if err == nil || !strings.Contains(err.Error(), `allow internal: allow-list entry "10.0.0.0/33"`) {
		t.Fatalf("a bad prefix: %v", err)
	}
}

func TestRequestBodyTimeout(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || c.RequestBodyTimeout != time.Minute {
		t.Fatalf("default request body timeout %v, %v; want 1m", c.RequestBodyTimeout, err)
	}
	if _, err := Load([]string{"--request-body-timeout", "0s"}, env(nil)); err == nil || !strings.Contains(err.Error(), "request body timeout must be positive") {
		t.Fatalf("a zero timeout: %v", err)
	}
}
