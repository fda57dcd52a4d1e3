package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/wire"
)

// storedRequests are the request types a start task stores and shows again: the V1 start
// request, which the V0 start's task shows too.
var storedRequests = []reflect.Type{reflect.TypeFor[apitypes.AppConversationStartRequest]()}

// secretPaths lists the JSON paths (a.b[].c, m{} for a map's values) of every field of t
// tagged wire:"secret", walking its structs, pointers, lists and maps.
func secretPaths(t reflect.Type, prefix string, stack []reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if slices.Contains(stack, t) {
		return nil
	}
	stack = append(stack, t)
	var out []string
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		out = secretPaths(t.Elem(), prefix+"[]", stack)
	case reflect.Map:
		out = secretPaths(t.Elem(), prefix+"{}", stack)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			if slices.Contains(strings.Split(f.Tag.Get("wire"), ","), "secret") {
				out = append(out, path)
				continue
			}
			out = append(out, secretPaths(f.Type, path, stack)...)
		}
	}
	return out
}

// secretCases give, for each secret field of a stored request, a start request that sets
// it to a value (a field holding several values gets two), and say what the echo shows
// there. A secret field added to a request type without a case here fails the test.
var secretCases = map[string]struct {
	body func(v1, v2 string) map[string]any
	// echoed is the field's value in the echo, the values masked.
	echoed any
}{
	"mcp_config.sse_servers[].api_key": {
		body: func(v1, _ string) map[string]any {
			return map[string]any{"mcp_config": map[string]any{"sse_servers": []any{
				map[string]any{"url": "http://127.0.0.1:1/sse", "api_key": v1}}}}
		},
		echoed: wire.Mask,
	},
	"mcp_config.shttp_servers[].api_key": {
		body: func(v1, _ string) map[string]any {
			return map[string]any{"mcp_config": map[string]any{"shttp_servers": []any{
				map[string]any{"url": "http://127.0.0.1:1/mcp", "api_key": v1, "timeout": 5}}}}
		},
		echoed: wire.Mask,
	},
	"mcp_config.stdio_servers[].env": {
		body: func(v1, v2 string) map[string]any {
			return map[string]any{"mcp_config": map[string]any{"stdio_servers": []any{
				map[string]any{"name": "tools", "command": "mcp-tools", "env": map[string]any{"TOOLS_TOKEN": v1, "OTHER": v2}}}}}
		},
		echoed: map[string]any{"TOOLS_TOKEN": wire.Mask, "OTHER": wire.Mask},
	},
	"secrets": {
		body: func(v1, v2 string) map[string]any {
			return map[string]any{"secrets": map[string]any{"API_TOKEN": v1, "DEPLOY_KEY": v2}}
		},
		echoed: map[string]any{"API_TOKEN": wire.Mask, "DEPLOY_KEY": wire.Mask},
	},
}

// at follows a secret path through a decoded echo, taking the first element of each list.
func at(v any, path string) (any, bool) {
	for part := range strings.SplitSeq(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		name, _ = strings.CutSuffix(name, "{}")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok {
			return nil, false
		}
		if list {
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return nil, false
			}
			v = l[0]
		}
	}
	return v, true
}

// TestStartTaskSecretsMasked: for every field tagged secret of every request a start task
// stores (found by reflection, so that a new one cannot be left out), a value given in a
// start request is masked in the answer to the start, in the stream-start answer, in the
// start task's batch get and search, and nowhere in the data directory in plain text; the
// conversation's sealed request keeps it, for the start to use.
func TestStartTaskSecretsMasked(t *testing.T) {
	var paths []string
	for _, rt := range storedRequests {
		paths = append(paths, secretPaths(rt, "", nil)...)
	}
	for _, p := range paths {
		if _, ok := secretCases[p]; !ok {
			t.Errorf("the secret field %s of a stored request has no case in secretCases: add one", p)
		}
	}
	for p := range secretCases {
		if !slices.Contains(paths, p) {
			t.Errorf("secretCases has %s, which is no secret field of a stored request", p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	rec := &bodyRecorder{e: e}
	var plains []string
	for i, path := range paths {
		v1, v2 := "start-secret-PLAIN-"+string(rune('a'+i))+"1", "start-secret-PLAIN-"+string(rune('a'+i))+"2"
		plains = append(plains, v1, v2)
		c := secretCases[path]
		t.Run(path, func(t *testing.T) {
			e := e.in(t)
			rec := rec.in(t)
			var task v1Task
			if err := json.Unmarshal(rec.must("POST", "/api/v1/app-conversations", alice, c.body(v1, v2), http.StatusOK), &task); err != nil {
				t.Fatal(err)
			}
			checkEcho := func(where string, req map[string]any) {
				t.Helper()
				got, ok := at(req, path)
				if !ok || !reflect.DeepEqual(got, c.echoed) {
					t.Errorf("%s: %s is %#v, want %#v", where, path, got, c.echoed)
				}
			}
			checkEcho("the start's answer", task.Request)

			var batch []v1Task
			if err := json.Unmarshal(rec.must("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, alice, nil, http.StatusOK), &batch); err != nil || len(batch) != 1 {
				t.Fatalf("batch get: %v %+v", err, batch)
			}
			checkEcho("the batch get", batch[0].Request)
			var page v1TaskPage
			if err := json.Unmarshal(rec.must("GET", "/api/v1/app-conversations/start-tasks/search", alice, nil, http.StatusOK), &page); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(page.Items, func(x v1Task) bool { return x.ID == task.ID })
			if i < 0 {
				t.Fatalf("the search lacks task %s", task.ID)
			}
			checkEcho("the search", page.Items[i].Request)

			resp := e.streamStart(alice, c.body(v1, v2))
			streamed, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			rec.record("stream-start: " + string(streamed))
			var states []v1Task
			if err := json.Unmarshal(streamed, &states); err != nil || len(states) == 0 {
				t.Fatalf("stream-start answered %s: %v", streamed, err)
			}
			for _, s := range states {
				checkEcho("a stream-start state", s.Request)
			}

			// The values are kept, sealed, with the conversation: its start reads them there.
			stored, err := e.app.Store.GetStartTask(t.Context(), aliceID, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			conv, err := e.app.Store.GetConversation(t.Context(), aliceID, stored.ConversationID)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := e.app.Keyring.Open(conv.RequestSealed)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), v1) {
				t.Errorf("the conversation's sealed request lacks the value: %s", raw)
			}
		})
	}
	rec.checkNone(t, plains)
	e.checkDataDirLacks(t, plains)
}

// TestStartTaskLegacyRequestMasked: a start task stored before requests were masked, its MCP
// servers' keys and environment values as sent, shows them masked in every answer.
func TestStartTaskLegacyRequestMasked(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := conversation.Conversation{ID: "0123456789abcdef0123456789abcdef", OwnerID: aliceID, Version: conversation.V1,
		Title: "legacy", Tags: map[string]string{}, PRNumbers: []int{}, CreatedAt: now, UpdatedAt: now}
	legacy := `{"sandbox_id":null,"mcp_config":{"sse_servers":[{"url":"https://sse.example.com/sse","api_key":"legacy-sse-PLAIN"}],` +
		`"stdio_servers":[{"name":"fs","command":"mcp-fs","args":["-y"],"env":{"FS_TOKEN":"legacy-env-PLAIN"}}],` +
		`"shttp_servers":[{"url":"https://mcp.example.com/mcp","api_key":"legacy-shttp-PLAIN","timeout":null}]},` +
		`"secrets":{"INLINE":"**********"},"pr_number":[]}`
	task := conversation.StartTask{ID: "fedcba9876543210fedcba9876543210", OwnerID: aliceID, Status: conversation.TaskError,
		Detail: "stopped", ConversationID: c.ID, Request: json.RawMessage(legacy), CreatedAt: now, UpdatedAt: now}
	if err := e.app.Store.CreateConversation(t.Context(), c, task, nil, conversation.Claim{}); err != nil {
		t.Fatal(err)
	}
	rec := &bodyRecorder{e: e}
	var batch []v1Task
	json.Unmarshal(rec.must("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, alice, nil, http.StatusOK), &batch)
	var page v1TaskPage
	json.Unmarshal(rec.must("GET", "/api/v1/app-conversations/start-tasks/search", alice, nil, http.StatusOK), &page)
	if len(batch) != 1 || len(page.Items) != 1 {
		t.Fatalf("tasks %+v, %+v", batch, page.Items)
	}
	for _, req := range []map[string]any{batch[0].Request, page.Items[0].Request} {
		for path, want := range map[string]any{
			"mcp_config.sse_servers[].api_key":   wire.Mask,
			"mcp_config.shttp_servers[].api_key": wire.Mask,
			"mcp_config.stdio_servers[].env":     map[string]any{"FS_TOKEN": wire.Mask},
			"mcp_config.stdio_servers[].command": "mcp-fs",
			"secrets":                            map[string]any{"INLINE": wire.Mask},
		} {
			if got, _ := at(req, path); !reflect.DeepEqual(got, want) {
				t.Errorf("%s is %#v, want %#v", path, got, want)
			}
		}
	}
	rec.checkNone(t, []string{"legacy-sse-PLAIN", "legacy-env-PLAIN", "legacy-shttp-PLAIN"})
}
