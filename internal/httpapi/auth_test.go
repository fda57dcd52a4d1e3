package httpapi_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// publicRoutes are the only routes docs/api.md lets through without a key.
var publicRoutes = []string{"GET /agent-server/{sandbox_id}/alive", "GET /alive", "GET /api/options/config", "GET /api/v1/web-client/config", "GET /health", "GET /openapi.json", "GET /ready", "GET /server_info"}

// servedRoutes lists "METHOD /path" of every operation in the served OpenAPI document, with
// whether it declares a security requirement. The document is generated from the route table,
// so this is every route the server has.
func servedRoutes(t *testing.T, e *env) map[string]bool {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	e.must("GET", "/openapi.json", "", nil, http.StatusOK, &doc)
	out := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			out[strings.ToUpper(method)+" "+path] = len(op.Security) > 0
		}
	}
	if len(out) < 20 {
		t.Fatalf("the OpenAPI document lists only %d operations", len(out))
	}
	return out
}

// concrete fills the path parameters of a route pattern.
func concrete(path string) string {
	r := strings.NewReplacer("{sandbox_id}", "0123456789abcdef0123456789abcdef",
		"{conversation_id}", "0123456789abcdef0123456789abcdef", "{key_id}", "some-key",
		"{event_id}", "01234567-89ab-cdef-0123-456789abcdef")
	return r.Replace(path)
}

func TestAuthRequired(t *testing.T) {
	e := newEnv(t)
	routes := servedRoutes(t, e)

	t.Run("only the documented routes are public", func(t *testing.T) {
		var public []string
		for r, secured := range routes {
			if !secured {
				public = append(public, r)
			}
		}
		slices.Sort(public)
		if !slices.Equal(public, publicRoutes) {
			t.Fatalf("routes without a security requirement: %q, want %q", public, publicRoutes)
		}
	})

	for _, r := range slices.Sorted(maps.Keys(routes)) {
		if !routes[r] {
			continue
		}
		method, path, _ := strings.Cut(r, " ")
		t.Run(r, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				header http.Header
			}{
				{"no key", http.Header{}},
				{"wrong key", http.Header{"X-Session-Api-Key": {"agd_wrong"}}},
				{"empty key", http.Header{"X-Session-Api-Key": {" "}}},
				{"wrong bearer", http.Header{"Authorization": {"Bearer agd_wrong"}}},
				{"the admin key in another scheme", http.Header{"Authorization": {"Basic " + adminKey}}},
				{"the admin key in a query", http.Header{}},
			} {
				p := concrete(path)
				if tc.name == "the admin key in a query" {
					p += "?api_key=" + adminKey + "&session_api_key=" + adminKey
				}
				// A body the route would accept, so only the key can be what is refused.
				status, body := sendWithHeaders(t, e, method, p, tc.header, `{"name":"x"}`)
				if status != http.StatusUnauthorized || strings.TrimSpace(body) != `{"detail":"Unauthorized"}` {
					t.Fatalf("%s: %d %s, want 401 {\"detail\":\"Unauthorized\"}", tc.name, status, body)
				}
			}
		})
	}

	t.Run("unauthenticated writes change nothing", func(t *testing.T) {
		e := e.in(t)
		sendWithHeaders(t, e, "POST", "/api/v1/users", http.Header{"X-Session-Api-Key": {"agd_wrong"}}, `{"name":"sneaky"}`)
		e.must("POST", "/api/v1/users", adminKey, map[string]any{"name": "sneaky"}, http.StatusCreated, nil)
	})
}

// sendWithHeaders sends a request with exactly these headers (and a JSON body for methods
// that take one) and returns the status and body.
func sendWithHeaders(t *testing.T, e *env, method, path string, h http.Header, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if method == "POST" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestAuthHeaders(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"X-Session-API-Key", http.Header{"X-Session-Api-Key": {alice}}, 200},
		{"Authorization: Bearer", http.Header{"Authorization": {"Bearer " + alice}}, 200},
		{"lower-case bearer", http.Header{"Authorization": {"bearer " + alice}}, 200},
		{"bearer with spaces", http.Header{"Authorization": {"Bearer   " + alice + " "}}, 200},
		{"bearer without a key", http.Header{"Authorization": {"Bearer "}}, 401},
		{"key without a scheme", http.Header{"Authorization": {alice}}, 401},
		{"a prefix of the key", http.Header{"X-Session-Api-Key": {alice[:len(alice)-1]}}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := sendWithHeaders(t, e, "GET", "/api/v1/users/me", tc.header, "")
			if status != tc.want {
				t.Fatalf("%d %s, want %d", status, body, tc.want)
			}
			if status == http.StatusOK {
				var u userJSON
				if err := json.Unmarshal([]byte(body), &u); err != nil || u.ID != aliceID {
					t.Fatalf("/me answered %s, want alice", body)
				}
			}
		})
	}
}

func TestPublicRoutes(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		path, want string
	}{
		{"/alive", `{"status":"ok"}`},
		{"/health", `"OK"`},
		{"/ready", `{"status":"ready","checks":{"sandbox_backend":"ok","store":"ok"}}`},
		{"/openapi.json", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			for _, h := range []http.Header{{}, {"X-Session-Api-Key": {"agd_wrong"}}} {
				status, body := sendWithHeaders(t, e, "GET", tc.path, h, "")
				if status != http.StatusOK {
					t.Fatalf("%d %s, want 200", status, body)
				}
				if tc.want != "" && strings.TrimSpace(body) != tc.want {
					t.Fatalf("answered %s, want %s", body, tc.want)
				}
				if tc.want == "" && !json.Valid([]byte(body)) {
					t.Fatalf("answered invalid JSON")
				}
			}
		})
	}

	t.Run("unknown path", func(t *testing.T) {
		status, body := sendWithHeaders(t, e, "GET", "/api/v1/nothing-here", http.Header{}, "")
		if status != http.StatusNotFound || strings.TrimSpace(body) != `{"detail":"Not Found"}` {
			t.Fatalf("%d %s, want 404 {\"detail\":\"Not Found\"}", status, body)
		}
	})
}
