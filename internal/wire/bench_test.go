package wire

import (
	"encoding/json"
	"sync"
	"testing"
)

// benchBody is a realistic ~1 KB start-conversation request.
var benchBody = []byte(`{
  "id": "3f2a9c1e5b7d4e8f",
  "version": 2,
  "initial_user_msg": "Please fix the failing unit tests in the payments module and open a pull request with a short summary of the root cause.",
  "repository": "acme/payments",
  "git_provider": "github",
  "selected_branch": "main",
  "image_urls": ["https://example.com/a.png", "https://example.com/b.png"],
  "provider_tokens": {"github": "ghp_exampletokenexampletoken", "gitlab": "glpat-exampletoken"},
  "mcp_config": {
    "sse_servers": ["https://mcp.example.com/sse", {"url": "https://tools.example.com/sse", "api_key": "sk-example"}],
    "stdio_servers": [
      {"name": "fetch", "command": "uvx", "args": ["mcp-server-fetch"], "env": {"LOG_LEVEL": "info"}},
      {"name": "fs", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/workspace"], "env": {}}
    ]
  },
  "labels": {"ci": {"name": "ci", "command": "make", "args": ["test"]}},
  "metadata": {"source": "slack", "thread": "C0123/p456", "priority": 2},
  "extra": {"client": "web", "features": ["a", "b", "c"]},
  "created_at": "2024-05-06T07:08:09.123Z",
  "max_iterations": 250,
  "temperature": 0.2,
  "confirm": true,
  "small": 3,
  "count": 42,
  "title": "Fix payments tests",
  "nick": "p",
  "mode": "fast"
}`)

func BenchmarkDecodeJSON(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		var r StartRequest
		if err := DecodeJSON(benchBody, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshal is the baseline: encoding/json alone, without
// located errors or validation.
func BenchmarkStdlibUnmarshal(b *testing.B) {
	type plain struct {
		StartRequest
		MCPConfig json.RawMessage `json:"mcp_config"`
	}
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		var r plain
		if err := json.Unmarshal(benchBody, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchBodyDecodes(t *testing.T) {
	var r StartRequest
	checkProblems(t, DecodeJSON(benchBody, &r), nil)
	if len(r.MCPConfig.SSEServers) != 2 || r.MCPConfig.SSEServers[1].APIKey != "sk-example" || r.Labels["ci"].Command != "make" {
		t.Fatalf("decoded %+v", r)
	}
}

// TestConcurrentDecode lets the race detector check the type cache.
func TestConcurrentDecode(t *testing.T) {
	type fresh struct {
		A []Login `json:"a" wire:"required"`
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var r StartRequest
			if err := DecodeJSON(benchBody, &r); err != nil {
				t.Error(err)
			}
			var f fresh
			if err := DecodeJSON([]byte(`{"a": [{"user": "u", "password": "p"}]}`), &f); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
