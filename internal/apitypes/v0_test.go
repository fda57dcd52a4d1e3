package apitypes

import (
	"errors"
	"reflect"
	"testing"

	"github.com/agentd/agentd/internal/wire"
)

func problems(t *testing.T, body string) []wire.Problem {
	t.Helper()
	var req InitSessionRequest
	err := wire.DecodeJSON([]byte(body), &req)
	if err == nil {
		return nil
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("decode error %T: %v", err, err)
	}
	return we.Problems
}

func TestInitSessionRequestValidation(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []wire.Problem
	}{
		{"empty object is fine", `{}`, nil},
		{"unknown field", `{"nope": 1}`, []wire.Problem{{Type: "extra_forbidden", Loc: []any{"body", "nope"}, Msg: "Extra inputs are not permitted"}}},
		{"bad provider", `{"git_provider": "svn"}`, []wire.Problem{{Type: "enum", Loc: []any{"body", "git_provider"},
			Msg: "Input should be 'github', 'gitlab', 'bitbucket' or 'enterprise_sso'"}}},
		{"wrong type", `{"initial_user_msg": 5}`, []wire.Problem{{Type: "string_type", Loc: []any{"body", "initial_user_msg"}, Msg: "Input should be a valid string"}}},
		{"image urls not a list", `{"image_urls": "x"}`, []wire.Problem{{Type: "list_type", Loc: []any{"body", "image_urls"}, Msg: "Input should be a valid list"}}},
		{"bad sse url", `{"mcp_config": {"sse_servers": [{"url": "example.com"}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "sse_servers", 0, "url"}, Msg: "Value error, URL must include a scheme (http:// or https://)"}}},
		{"sse url as string", `{"mcp_config": {"sse_servers": ["http://ok.example/sse", "ftp://x.example"]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "sse_servers", 1, "url"}, Msg: "Value error, URL scheme must be http, https, ws, or wss"}}},
		{"no host", `{"mcp_config": {"shttp_servers": [{"url": "localhost:8080"}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "shttp_servers", 0, "url"}, Msg: "Value error, URL must include a valid domain/host"}}},
		{"empty stdio command", `{"mcp_config": {"stdio_servers": [{"name": "a", "command": "  "}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "stdio_servers", 0, "command"}, Msg: "Value error, Command cannot be empty"}}},
		{"duplicate names", `{"mcp_config": {"stdio_servers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "stdio_servers", 1, "name"}, Msg: "Value error, duplicate stdio server name \"a\" (also at index 0)"}}},
		{"mcp unknown key", `{"mcp_config": {"servers": []}}`, []wire.Problem{{Type: "extra_forbidden", Loc: []any{"body", "mcp_config", "servers"}, Msg: "Extra inputs are not permitted"}}},
		{"stdio missing name", `{"mcp_config": {"stdio_servers": [{"command": "x"}]}}`, []wire.Problem{{Type: "missing", Loc: []any{"body", "mcp_config", "stdio_servers", 0, "name"}, Msg: "Field required"}}},
		{"args string unbalanced", `{"mcp_config": {"stdio_servers": [{"name": "a", "command": "x", "args": "'oops"}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "stdio_servers", 0, "args"}, Msg: "Value error, Invalid argument format: no closing quotation"}}},
		{"env string", `{"mcp_config": {"stdio_servers": [{"name": "a", "command": "x", "env": "A=1,1B=2"}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "stdio_servers", 0, "env"}, Msg: "Value error, Invalid environment variable name '1B'. Must start with a letter or underscore and contain only alphanumeric characters and underscores"}}},
		{"shttp timeout", `{"mcp_config": {"shttp_servers": [{"url": "http://a.example", "timeout": 0}]}}`, []wire.Problem{{Type: "value_error",
			Loc: []any{"body", "mcp_config", "shttp_servers", 0, "timeout"}, Msg: "Value error, Timeout must be positive"}}},
		{"bad conversation id", `{"conversation_id": "a/b"}`, []wire.Problem{{Type: "value_error", Loc: []any{"body", "conversation_id"},
			Msg: "Value error, conversation_id must be 1-100 characters of letters, digits, '-' and '_'"}}},
		{"replay not a list", `{"replay_json": "{\"a\": 1}"}`, []wire.Problem{{Type: "value_error", Loc: []any{"body", "replay_json"}, Msg: "Value error, replay_json must be a JSON list of events"}}},
		// git_provider and task_type may be left out.
		{"suggested task incomplete", `{"suggested_task": {"repo": "a/b"}}`, []wire.Problem{
			{Type: "missing", Loc: []any{"body", "suggested_task", "issue_number"}, Msg: "Field required"},
			{Type: "missing", Loc: []any{"body", "suggested_task", "title"}, Msg: "Field required"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.body)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("problems:\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestStdioArgsAndEnvForms(t *testing.T) {
	var req InitSessionRequest
	body := `{"mcp_config": {"stdio_servers": [{"name": "fs", "command": "npx", "args": "-y \"my server\" --flag", "env": "A=1, B=two"}]}}`
	if err := wire.DecodeJSON([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	s := req.MCPConfig.StdioServers[0]
	if !reflect.DeepEqual([]string(s.Args), []string{"-y", "my server", "--flag"}) {
		t.Errorf("args = %q", s.Args)
	}
	if !reflect.DeepEqual(s.Env, map[string]string{"A": "1", "B": "two"}) {
		t.Errorf("env = %v", s.Env)
	}
}
