package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMalformedBodies sends every endpoint that reads a JSON body the same malformed bodies:
// each must get a 4xx (never a 500) and write nothing.
func TestMalformedBodies(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	// Alice has settings and a token, so that a stray write would change a row.
	e.must("POST", "/api/settings", alice, map[string]any{"language": "en", "llm_api_key": "k"}, http.StatusOK, nil)
	e.token(alice, "github")
	before := e.dbRows()

	deep := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	huge := `{"x": "` + strings.Repeat("a", 9<<20) + `"}`

	for _, ep := range []struct {
		path, key string
		// field names an object field of the body; str builds a body whose only string
		// value is s; typed is a body with a number or boolean sent as a string.
		field string
		str   func(s string) string
		typed string
	}{
		{path: "/api/conversations", key: alice, field: "mcp_config",
			str:   func(s string) string { return `{"initial_user_msg": "` + s + `"}` },
			typed: `{"suggested_task": {"git_provider": "github", "task_type": "OPEN_ISSUE", "repo": "a/b", "issue_number": "5", "title": "t"}}`},
		{path: "/api/v1/app-conversations", key: alice, field: "initial_message",
			str:   func(s string) string { return `{"title": "` + s + `"}` },
			typed: `{"pr_number": ["5"]}`},
		{path: "/api/settings", key: alice, field: "mcp_config",
			str:   func(s string) string { return `{"language": "` + s + `"}` },
			typed: `{"max_iterations": "5"}`},
		{path: "/api/add-git-providers", key: alice, field: "provider_tokens",
			str:   func(s string) string { return `{"provider_tokens": {"gitlab": {"token": "` + s + `"}}}` },
			typed: `{"mcp_config": {"shttp_servers": [{"url": "http://a.example", "timeout": "5"}]}}`},
		{path: "/api/v1/users", key: adminKey, field: "name",
			str:   func(s string) string { return `{"name": "` + s + `"}` },
			typed: `{"name": "n", "is_admin": "true"}`},
		{path: "/api/keys", key: alice, field: "name",
			str:   func(s string) string { return `{"name": "` + s + `"}` },
			typed: `{"name": 12345}`},
	} {
		t.Run(strings.TrimPrefix(ep.path, "/"), func(t *testing.T) {
			e := e.in(t)
			for _, tc := range []struct {
				name, body string
				status     int
				detail     string // the exact detail, when not a list of problems
			}{
				{"empty", ``, http.StatusUnprocessableEntity, ""},
				{"whitespace", " \n", http.StatusUnprocessableEntity, ""},
				{"null", `null`, http.StatusUnprocessableEntity, ""},
				{"array", `[]`, http.StatusUnprocessableEntity, ""},
				{"string", `"x"`, http.StatusUnprocessableEntity, ""},
				{"number", `1e999`, http.StatusUnprocessableEntity, ""},
				{"truncated", `{"a":`, http.StatusUnprocessableEntity, ""},
				{"byte order mark", "\xef\xbb\xbf{}", http.StatusUnprocessableEntity, ""},
				{"nested 10000 deep", deep(10000), http.StatusUnprocessableEntity, ""},
				{"field nested 10000 deep", `{"` + ep.field + `": ` + deep(9999) + `}`, http.StatusUnprocessableEntity, ""},
				{"nested too deep", deep(100000), http.StatusUnprocessableEntity, ""},
				{"field nested too deep", `{"` + ep.field + `": ` + deep(100000) + `}`, http.StatusUnprocessableEntity, ""},
				{"over 8 MiB", huge, http.StatusRequestEntityTooLarge, "Request body too large"},
				{"invalid UTF-8 in a string", ep.str("caf\xe9 \xff\xfe"), http.StatusBadRequest, "There was an error parsing the body"},
				{"invalid UTF-8 outside strings", "\xff" + ep.str("x"), http.StatusBadRequest, "There was an error parsing the body"},
				{"number as string", ep.typed, http.StatusUnprocessableEntity, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e := e.in(t)
					status, body := e.call("POST", ep.path, ep.key, tc.body)
					if status != tc.status {
						t.Errorf("status %d, want %d; body %.300s", status, tc.status, body)
					}
					var detail struct {
						Detail json.RawMessage `json:"detail"`
					}
					if err := json.Unmarshal(body, &detail); err != nil || len(detail.Detail) == 0 {
						t.Errorf("body %.300s is not a {\"detail\": ...} error", body)
					}
					if tc.detail != "" && string(detail.Detail) != `"`+tc.detail+`"` {
						t.Errorf("detail %s, want %q", detail.Detail, tc.detail)
					}
					if len(body) > 4096 {
						t.Errorf("error body is %d bytes: the input is echoed", len(body))
					}
					// A write is reported once, not again by every later case.
					after := e.dbRows()
					checkDBUnchanged(t, before, after)
					before = after
				})
			}
		})
	}
	if ids := e.sandboxIDList(alice); len(ids) != 0 {
		t.Errorf("sandboxes after malformed requests: %v", ids)
	}
}

// TestMalformedBodiesIgnored: the POST endpoints that take no body ignore it, as FastAPI does,
// and a malformed one changes nothing about their answer.
func TestMalformedBodiesIgnored(t *testing.T) {
	e := newEnv(t)
	before := e.dbRows()
	for _, path := range []string{"/api/v1/sandboxes/0123456789abcdef0123456789abcdef/pause", "/api/v1/sandboxes/0123456789abcdef0123456789abcdef/resume"} {
		for _, body := range []string{``, `null`, `{"a":`, "\xff", strings.Repeat("[", 100000), strings.Repeat("a", 9<<20)} {
			status, resp := e.call("POST", path, adminKey, body)
			if status != http.StatusNotFound || string(resp) != `{"detail":"Sandbox not found"}`+"\n" {
				t.Errorf("POST %s with a %d-byte body: %d %.200s, want 404 Sandbox not found", path, len(body), status, resp)
			}
		}
	}
	checkDBUnchanged(t, before, e.dbRows())
}
