package settings_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentd/agentd/internal/settings"
)

// TestMCPConfigLooseShapes: a configuration in the shapes the API accepts (a server as its URL
// alone, args as one shell-quoted string, env as "K=V,K2=V2"), as a stored start request
// holds it, reads as the same servers as its object form.
func TestMCPConfigLooseShapes(t *testing.T) {
	loose := `{"sse_servers": [" https://a.example/sse "], "shttp_servers": ["https://b.example/mcp"],
		"stdio_servers": [{"name": "fs", "command": "npx", "args": "-y 'my server'", "env": "A=1, B = 2"}]}`
	strict := `{"sse_servers": [{"url": "https://a.example/sse"}], "shttp_servers": [{"url": "https://b.example/mcp", "timeout": null}],
		"stdio_servers": [{"name": "fs", "command": "npx", "args": ["-y", "my server"], "env": {"A": "1", "B": "2"}}]}`
	var a, b settings.MCPConfig
	if err := json.Unmarshal([]byte(loose), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strict), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("loose %+v\nstrict %+v", a, b)
	}
	for _, bad := range []string{
		`{"stdio_servers": [{"name": "a", "command": "x", "args": "'unclosed"}]}`,
		`{"stdio_servers": [{"name": "a", "command": "x", "env": "NOEQUALS"}]}`,
		`{"stdio_servers": [{"name": "a", "command": "x", "args": 5}]}`,
	} {
		var m settings.MCPConfig
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s read as %+v", bad, m)
		}
	}
}
