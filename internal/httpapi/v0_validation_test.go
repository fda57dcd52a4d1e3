package httpapi_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/wire"
)

func TestV0CreateValidation(t *testing.T) {
	e := newEnv(t)
	// One conversation exists, so that "nothing written" compares non-empty listings.
	existing := e.v0Create(adminKey, map[string]any{"initial_user_msg": "hi"})
	e.v0WaitStatus(adminKey, existing, "RUNNING")
	sandboxes := e.sandboxIDList(adminKey)
	before := e.dbRows()

	// Messages of POST /api/conversations problems.
	const (
		msgExtra       = "Extra inputs are not permitted"
		msgStr         = "Input should be a valid string"
		msgProvider    = "Input should be 'github', 'gitlab', 'bitbucket' or 'enterprise_sso'"
		msgNoScheme    = "Value error, URL must include a scheme (http:// or https://)"
		msgNoHost      = "Value error, URL must include a valid domain/host"
		msgBadScheme   = "Value error, URL scheme must be http, https, ws, or wss"
		msgEmptyURL    = "Value error, URL cannot be empty"
		msgEmptyCmd    = "Value error, Command cannot be empty"
		msgSpacedCmd   = "Value error, Command should be a single executable without spaces (use args for arguments)"
		msgBadName     = "Value error, Server name can only contain letters, numbers, hyphens, and underscores"
		msgBadConvID   = "Value error, conversation_id must be 1-100 characters of letters, digits, '-' and '_'"
		msgModel       = "Input should be a valid dictionary or object to extract fields from"
		msgMissing     = "Field required"
		msgJSONInvalid = "JSON decode error"
	)
	p := func(typ, msg string, loc []any) wire.Problem { return wire.Problem{Type: typ, Loc: loc, Msg: msg} }
	mcpAt := func(loc ...any) []any { return append([]any{"body", "mcp_config"}, loc...) }
	mcp := func(cfg string) string { return `{"mcp_config": ` + cfg + `}` }
	stdio := func(server string) string { return mcp(`{"stdio_servers": [` + server + `]}`) }
	task := func(fields string) string {
		return `{"suggested_task": {"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "a/b", "title": "t", ` + fields + `}}`
	}
	body := []any{"body"}
	at := func(loc ...any) []any { return append([]any{"body"}, loc...) }

	for _, tc := range []struct {
		name, body string
		want       []wire.Problem
	}{
		// The body as a whole.
		{"empty body", ``, []wire.Problem{p("missing", msgMissing, body)}},
		{"null", `null`, []wire.Problem{p("missing", msgMissing, body)}},
		{"array", `[{"initial_user_msg": "hi"}]`, []wire.Problem{p("model_attributes_type", msgModel, body)}},
		{"string", `"hi"`, []wire.Problem{p("model_attributes_type", msgModel, body)}},
		{"number", `42`, []wire.Problem{p("model_attributes_type", msgModel, body)}},
		{"truncated", `{"a":`, []wire.Problem{p("json_invalid", msgJSONInvalid, at(5))}},
		{"trailing comma", `{"initial_user_msg": "x",}`, []wire.Problem{p("json_invalid", msgJSONInvalid, at(25))}},
		{"single quotes", `{'initial_user_msg': 'x'}`, []wire.Problem{p("json_invalid", msgJSONInvalid, at(1))}},
		{"two values", `{} {}`, []wire.Problem{p("json_invalid", msgJSONInvalid, at(3))}},

		// Unknown fields, sorted after the field problems.
		{"unknown field", `{"nope": 1}`, []wire.Problem{p("extra_forbidden", msgExtra, at("nope"))}},
		{"unknown fields", `{"zz": 1, "aa": 2, "repository": "a/b"}`, []wire.Problem{
			p("extra_forbidden", msgExtra, at("aa")), p("extra_forbidden", msgExtra, at("zz"))}},
		{"field name case matters", `{"Repository": "a/b"}`, []wire.Problem{p("extra_forbidden", msgExtra, at("Repository"))}},

		// Enums and types of each field.
		{"bad git_provider", `{"git_provider": "svn"}`, []wire.Problem{p("enum", msgProvider, at("git_provider"))}},
		{"git_provider upper case", `{"git_provider": "GitHub"}`, []wire.Problem{p("enum", msgProvider, at("git_provider"))}},
		{"git_provider number", `{"git_provider": 1}`, []wire.Problem{p("enum", msgProvider, at("git_provider"))}},
		{"repository number", `{"repository": 5}`, []wire.Problem{p("string_type", msgStr, at("repository"))}},
		{"repository too long", `{"repository": "` + strings.Repeat("r", 301) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 300 characters", at("repository"))}},
		{"selected_branch too long", `{"selected_branch": "` + strings.Repeat("b", 301) + `"}`, []wire.Problem{p("string_too_long", "String should have at most 300 characters", at("selected_branch"))}},
		{"selected_branch bool", `{"selected_branch": true}`, []wire.Problem{p("string_type", msgStr, at("selected_branch"))}},
		{"initial_user_msg list", `{"initial_user_msg": ["hi"]}`, []wire.Problem{p("string_type", msgStr, at("initial_user_msg"))}},
		{"image_urls string", `{"image_urls": "https://img.example/a.png"}`, []wire.Problem{p("list_type", "Input should be a valid list", at("image_urls"))}},
		{"image_urls item number", `{"image_urls": ["https://img.example/a.png", 2]}`, []wire.Problem{p("string_type", msgStr, at("image_urls", 1))}},
		{"image_urls empty item", `{"image_urls": [" "]}`, []wire.Problem{p("value_error", "Value error, image URL cannot be empty", at("image_urls", 0))}},
		{"replay_json object", `{"replay_json": []}`, []wire.Problem{p("string_type", msgStr, at("replay_json"))}},
		{"replay_json not a list", `{"replay_json": "{\"a\": 1}"}`, []wire.Problem{p("value_error", "Value error, replay_json must be a JSON list of events", at("replay_json"))}},
		{"replay_json not JSON", `{"replay_json": "[{"}`, []wire.Problem{p("value_error", "Value error, replay_json must be a JSON list of events", at("replay_json"))}},
		{"replay_json item not an object", `{"replay_json": "[{}, 1]"}`, []wire.Problem{p("value_error", "Value error, replay_json item 1 must be an event object", at("replay_json"))}},
		{"suggested_task string", `{"suggested_task": "fix it"}`, []wire.Problem{p("model_attributes_type", msgModel, at("suggested_task"))}},
		// git_provider and task_type may be left out (the conversation's provider, OPEN_ISSUE).
		{"suggested_task empty", `{"suggested_task": {}}`, []wire.Problem{
			p("missing", msgMissing, at("suggested_task", "repo")), p("missing", msgMissing, at("suggested_task", "issue_number")),
			p("missing", msgMissing, at("suggested_task", "title"))}},
		{"suggested_task number 0", task(`"issue_number": 0`), []wire.Problem{
			p("greater_than_equal", "Input should be greater than or equal to 1", at("suggested_task", "issue_number"))}},
		{"suggested_task number as string", task(`"issue_number": "7"`), []wire.Problem{p("int_type", "Input should be a valid integer", at("suggested_task", "issue_number"))}},
		{"suggested_task fractional number", task(`"issue_number": 7.5`), []wire.Problem{
			p("int_from_float", "Input should be a valid integer, got a number with a fractional part", at("suggested_task", "issue_number"))}},
		{"suggested_task bad type", `{"suggested_task": {"git_provider": "github", "task_type": "FIX", "repo": "a/b", "issue_number": 1, "title": "t"}}`, []wire.Problem{
			p("enum", "Input should be 'MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS', 'OPEN_ISSUE', 'OPEN_PR' or 'CREATE_MICROAGENT'", at("suggested_task", "task_type"))}},
		{"create_microagent list", `{"create_microagent": []}`, []wire.Problem{p("model_attributes_type", msgModel, at("create_microagent"))}},
		{"create_microagent without repo", `{"create_microagent": {"title": "t"}}`, []wire.Problem{p("missing", msgMissing, at("create_microagent", "repo"))}},
		{"create_microagent bad provider", `{"create_microagent": {"repo": "a/b", "git_provider": "svn"}}`, []wire.Problem{p("enum", msgProvider, at("create_microagent", "git_provider"))}},
		{"conversation_instructions number", `{"conversation_instructions": 1}`, []wire.Problem{p("string_type", msgStr, at("conversation_instructions"))}},
		{"conversation_id number", `{"conversation_id": 12}`, []wire.Problem{p("string_type", msgStr, at("conversation_id"))}},
		{"conversation_id with slash", `{"conversation_id": "a/b"}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},
		{"conversation_id 101 characters", `{"conversation_id": "` + strings.Repeat("a", 101) + `"}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},
		{"conversation_id empty", `{"conversation_id": ""}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},
		{"conversation_id space", `{"conversation_id": "a b"}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},
		{"conversation_id dot dot", `{"conversation_id": ".."}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},
		{"conversation_id non-ASCII", `{"conversation_id": "caf\u00e9"}`, []wire.Problem{p("value_error", msgBadConvID, at("conversation_id"))}},

		// mcp_config.
		{"mcp_config string", mcp(`"http://a.example"`), []wire.Problem{p("model_attributes_type", msgModel, mcpAt())}},
		{"mcp_config unknown key", mcp(`{"servers": []}`), []wire.Problem{p("extra_forbidden", msgExtra, mcpAt("servers"))}},
		{"sse_servers object", mcp(`{"sse_servers": {"url": "http://a.example"}}`), []wire.Problem{p("list_type", "Input should be a valid list", mcpAt("sse_servers"))}},
		{"sse url without scheme", mcp(`{"sse_servers": [{"url": "example.com/sse"}]}`), []wire.Problem{p("value_error", msgNoScheme, mcpAt("sse_servers", 0, "url"))}},
		{"sse url without host", mcp(`{"sse_servers": [{"url": "localhost:8080"}]}`), []wire.Problem{p("value_error", msgNoHost, mcpAt("sse_servers", 0, "url"))}},
		{"sse url scheme only", mcp(`{"sse_servers": [{"url": "http://"}]}`), []wire.Problem{p("value_error", msgNoHost, mcpAt("sse_servers", 0, "url"))}},
		{"sse url bad scheme", mcp(`{"sse_servers": [{"url": "ftp://files.example"}]}`), []wire.Problem{p("value_error", msgBadScheme, mcpAt("sse_servers", 0, "url"))}},
		{"sse url empty", mcp(`{"sse_servers": [{"url": ""}]}`), []wire.Problem{p("value_error", msgEmptyURL, mcpAt("sse_servers", 0, "url"))}},
		{"sse url blank", mcp(`{"sse_servers": [{"url": "  "}]}`), []wire.Problem{p("value_error", msgEmptyURL, mcpAt("sse_servers", 0, "url"))}},
		{"sse url missing", mcp(`{"sse_servers": [{"api_key": "k"}]}`), []wire.Problem{p("missing", msgMissing, mcpAt("sse_servers", 0, "url"))}},
		{"sse url number", mcp(`{"sse_servers": [{"url": 5}]}`), []wire.Problem{p("string_type", msgStr, mcpAt("sse_servers", 0, "url"))}},
		{"sse server number", mcp(`{"sse_servers": [5]}`), []wire.Problem{p("model_attributes_type", msgModel, mcpAt("sse_servers", 0))}},
		{"sse plain string without scheme", mcp(`{"sse_servers": ["http://ok.example/sse", "example.com"]}`), []wire.Problem{p("value_error", msgNoScheme, mcpAt("sse_servers", 1, "url"))}},
		{"sse plain string bad scheme", mcp(`{"sse_servers": ["file:///etc/passwd"]}`), []wire.Problem{p("value_error", msgNoHost, mcpAt("sse_servers", 0, "url"))}},
		{"sse plain string empty", mcp(`{"sse_servers": [""]}`), []wire.Problem{p("value_error", msgEmptyURL, mcpAt("sse_servers", 0, "url"))}},
		{"shttp plain string without host", mcp(`{"shttp_servers": ["localhost:3000"]}`), []wire.Problem{p("value_error", msgNoHost, mcpAt("shttp_servers", 0, "url"))}},
		{"shttp url bad scheme", mcp(`{"shttp_servers": [{"url": "gopher://old.example"}]}`), []wire.Problem{p("value_error", msgBadScheme, mcpAt("shttp_servers", 0, "url"))}},
		{"shttp timeout 0", mcp(`{"shttp_servers": [{"url": "http://a.example", "timeout": 0}]}`), []wire.Problem{
			p("value_error", "Value error, Timeout must be positive", mcpAt("shttp_servers", 0, "timeout"))}},
		{"shttp timeout negative", mcp(`{"shttp_servers": [{"url": "http://a.example", "timeout": -1}]}`), []wire.Problem{
			p("value_error", "Value error, Timeout must be positive", mcpAt("shttp_servers", 0, "timeout"))}},
		{"shttp timeout 3601", mcp(`{"shttp_servers": [{"url": "http://a.example", "timeout": 3601}]}`), []wire.Problem{
			p("value_error", "Value error, Timeout cannot exceed 3600 seconds", mcpAt("shttp_servers", 0, "timeout"))}},
		{"shttp timeout string", mcp(`{"shttp_servers": [{"url": "http://a.example", "timeout": "60"}]}`), []wire.Problem{
			p("int_type", "Input should be a valid integer", mcpAt("shttp_servers", 0, "timeout"))}},
		{"stdio server string", stdio(`"npx server"`), []wire.Problem{p("model_attributes_type", msgModel, mcpAt("stdio_servers", 0))}},
		{"stdio missing name and command", stdio(`{}`), []wire.Problem{
			p("missing", msgMissing, mcpAt("stdio_servers", 0, "name")), p("missing", msgMissing, mcpAt("stdio_servers", 0, "command"))}},
		{"stdio empty command", stdio(`{"name": "fs", "command": ""}`), []wire.Problem{p("value_error", msgEmptyCmd, mcpAt("stdio_servers", 0, "command"))}},
		{"stdio blank command", stdio(`{"name": "fs", "command": " \t"}`), []wire.Problem{p("value_error", msgEmptyCmd, mcpAt("stdio_servers", 0, "command"))}},
		{"stdio command with spaces", stdio(`{"name": "fs", "command": "npx -y server"}`), []wire.Problem{p("value_error", msgSpacedCmd, mcpAt("stdio_servers", 0, "command"))}},
		{"stdio command with tab", stdio(`{"name": "fs", "command": "npx\tserver"}`), []wire.Problem{p("value_error", msgSpacedCmd, mcpAt("stdio_servers", 0, "command"))}},
		{"stdio name with space", stdio(`{"name": "my server", "command": "npx"}`), []wire.Problem{p("value_error", msgBadName, mcpAt("stdio_servers", 0, "name"))}},
		{"stdio name with dot", stdio(`{"name": "a.b", "command": "npx"}`), []wire.Problem{p("value_error", msgBadName, mcpAt("stdio_servers", 0, "name"))}},
		{"stdio empty name", stdio(`{"name": " ", "command": "npx"}`), []wire.Problem{p("value_error", "Value error, Server name cannot be empty", mcpAt("stdio_servers", 0, "name"))}},
		{"stdio bad env name", stdio(`{"name": "fs", "command": "npx", "env": {"1B": "x"}}`), []wire.Problem{p("value_error",
			"Value error, Invalid environment variable name '1B'. Must start with a letter or underscore and contain only alphanumeric characters and underscores",
			mcpAt("stdio_servers", 0, "env"))}},
		{"stdio env name with dash in string form", stdio(`{"name": "fs", "command": "npx", "env": "A=1,MY-VAR=2"}`), []wire.Problem{p("value_error",
			"Value error, Invalid environment variable name 'MY-VAR'. Must start with a letter or underscore and contain only alphanumeric characters and underscores",
			mcpAt("stdio_servers", 0, "env"))}},
		{"stdio env pair without =", stdio(`{"name": "fs", "command": "npx", "env": "A=1,B"}`), []wire.Problem{p("value_error",
			`Value error, Environment variable "B" must be in KEY=VALUE format`, mcpAt("stdio_servers", 0, "env"))}},
		{"stdio env value number", stdio(`{"name": "fs", "command": "npx", "env": {"A": 1}}`), []wire.Problem{p("string_type", msgStr, mcpAt("stdio_servers", 0, "env", "A"))}},
		{"stdio env list", stdio(`{"name": "fs", "command": "npx", "env": ["A=1"]}`), []wire.Problem{p("dict_type", "Input should be a valid dictionary", mcpAt("stdio_servers", 0, "env"))}},
		{"stdio args unbalanced quote", stdio(`{"name": "fs", "command": "npx", "args": "-y 'my server"}`), []wire.Problem{p("value_error",
			"Value error, Invalid argument format: no closing quotation", mcpAt("stdio_servers", 0, "args"))}},
		{"stdio args unbalanced double quote", stdio(`{"name": "fs", "command": "npx", "args": "\"x"}`), []wire.Problem{p("value_error",
			"Value error, Invalid argument format: no closing quotation", mcpAt("stdio_servers", 0, "args"))}},
		{"stdio args trailing backslash", stdio(`{"name": "fs", "command": "npx", "args": "x \\"}`), []wire.Problem{p("value_error",
			"Value error, Invalid argument format: no escaped character", mcpAt("stdio_servers", 0, "args"))}},
		{"stdio args item number", stdio(`{"name": "fs", "command": "npx", "args": ["-y", 1]}`), []wire.Problem{p("string_type", msgStr, mcpAt("stdio_servers", 0, "args", 1))}},
		{"stdio args object", stdio(`{"name": "fs", "command": "npx", "args": {}}`), []wire.Problem{p("list_type", "Input should be a valid list", mcpAt("stdio_servers", 0, "args"))}},
		{"duplicate stdio names", mcp(`{"stdio_servers": [{"name": "fs", "command": "a"}, {"name": "git", "command": "b"}, {"name": " fs ", "command": "c"}]}`), []wire.Problem{
			p("value_error", `Value error, duplicate stdio server name "fs" (also at index 0)`, mcpAt("stdio_servers", 2, "name"))}},
		{"duplicate sse urls", mcp(`{"sse_servers": ["http://a.example/sse", {"url": " http://a.example/sse "}]}`), []wire.Problem{
			p("value_error", `Value error, duplicate server URL "http://a.example/sse" (also at index 0)`, mcpAt("sse_servers", 1, "url"))}},
		{"duplicate shttp urls", mcp(`{"shttp_servers": [{"url": "http://a.example/mcp"}, "http://b.example/mcp", "http://a.example/mcp"]}`), []wire.Problem{
			p("value_error", `Value error, duplicate server URL "http://a.example/mcp" (also at index 0)`, mcpAt("shttp_servers", 2, "url"))}},

		// Several problems in one request: all reported, fields in declaration order, then the
		// unknown fields.
		{"several problems", `{"zzz": 1, "git_provider": "svn", "initial_user_msg": 5, "image_urls": "x",
			"suggested_task": {"repo": "a/b"},
			"mcp_config": {"sse_servers": ["example.com", "http://ok.example"], "stdio_servers": [{"name": "a b", "command": ""}],
				"shttp_servers": [{"url": "http://h.example", "timeout": 0}]},
			"conversation_id": 7, "aaa": 2}`, []wire.Problem{
			p("enum", msgProvider, at("git_provider")),
			p("string_type", msgStr, at("initial_user_msg")),
			p("list_type", "Input should be a valid list", at("image_urls")),
			p("missing", msgMissing, at("suggested_task", "issue_number")),
			p("missing", msgMissing, at("suggested_task", "title")),
			p("value_error", msgNoScheme, mcpAt("sse_servers", 0, "url")),
			p("value_error", msgBadName, mcpAt("stdio_servers", 0, "name")),
			p("value_error", msgEmptyCmd, mcpAt("stdio_servers", 0, "command")),
			p("value_error", "Value error, Timeout must be positive", mcpAt("shttp_servers", 0, "timeout")),
			p("string_type", msgStr, at("conversation_id")),
			p("extra_forbidden", msgExtra, at("aaa")),
			p("extra_forbidden", msgExtra, at("zzz")),
		}},
		{"several value errors", `{"conversation_id": "a/b", "replay_json": "{}", "image_urls": ["", "ok", " "]}`, []wire.Problem{
			p("value_error", msgBadConvID, at("conversation_id")),
			p("value_error", "Value error, replay_json must be a JSON list of events", at("replay_json")),
			p("value_error", "Value error, image URL cannot be empty", at("image_urls", 0)),
			p("value_error", "Value error, image URL cannot be empty", at("image_urls", 2)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, resp := e.call("POST", "/api/conversations", adminKey, tc.body)
			assertProblems(t, status, resp, tc.want)
			if ids := e.v0ConversationIDs(adminKey); !reflect.DeepEqual(ids, []string{existing}) {
				t.Errorf("conversations after a rejected request: %v, want only %s", ids, existing)
			}
			if ids := e.sandboxIDList(adminKey); !reflect.DeepEqual(ids, sandboxes) {
				t.Errorf("sandboxes after a rejected request: %v, want %v", ids, sandboxes)
			}
			checkDBUnchanged(t, before, e.dbRows())
		})
	}
}
