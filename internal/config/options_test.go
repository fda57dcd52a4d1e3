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

func TestProviderAPIURLs(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.GitHubAPIURL != "https://api.github.com" || c.GitLabAPIURL != "https://gitlab.com/api/v4" || c.BitbucketAPIURL != "https://api.bitbucket.org/2.0" {
		t.Fatalf("defaults %q %q %q", c.GitHubAPIURL, c.GitLabAPIURL, c.BitbucketAPIURL)
	}
	c, err = Load([]string{"--github-api-url", "https://ghe.example/api/v3/"}, env(map[string]string{
		"AGENTD_GITLAB_API_URL": "http://127.0.0.1:8080/api/v4", "AGENTD_BITBUCKET_API_URL": "https://bb.example/rest/api/1.0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GitHubAPIURL != "https://ghe.example/api/v3" || c.GitLabAPIURL != "http://127.0.0.1:8080/api/v4" || c.BitbucketAPIURL != "https://bb.example/rest/api/1.0" {
		t.Fatalf("set %q %q %q", c.GitHubAPIURL, c.GitLabAPIURL, c.BitbucketAPIURL)
	}
	if _, err := Load([]string{"--gitlab-api-url", "gitlab.example"}, env(nil)); err == nil || !strings.Contains(err.Error(), `gitlab api url "gitlab.example": want an http(s) URL`) {
		t.Fatalf("a URL without scheme: %v", err)
	}
}
