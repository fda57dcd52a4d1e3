package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
)

// postJSONAt posts body as JSON to an absolute URL with header and fails t unless the answer
// has status want; it returns the answer's body.
func (e *env) postJSONAt(t *testing.T, rawURL string, header http.Header, body any, want int) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range header {
		h[k] = v
	}
	st, answer := e.callAt("POST", rawURL, h, bytes.NewReader(b))
	if st != want {
		t.Fatalf("POST %s: %d %s, want %d", rawURL, st, answer, want)
	}
	return answer
}

// callAt sends a request to a server other than the env's main one: the agent-server base,
// at a URL a client built.
func (e *env) callAt(method, rawURL string, header http.Header, body io.Reader) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// hostOnly keeps the scheme, host and port of a URL, as OpenHands' web app does with a
// conversation_url.
func hostOnly(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host
}

// TestAgentServerBaseWebApp follows OpenHands' web app: from a started conversation's
// conversation_url it keeps the host, and reaches the event socket, pause and run, and the
// Changes tab at that host's root.
func TestAgentServerBaseWebApp(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	c := e.startWorkspaceConv(alice)
	if !strings.HasPrefix(c.url, e.agentSrv.URL+"/api/conversations/") {
		t.Fatalf("conversation_url %s is not at the agent-server base %s", c.url, e.agentSrv.URL)
	}
	host := hostOnly(t, c.url)
	withKey := http.Header{"X-Session-API-Key": {c.sessionKey}}

	// The socket, with the key in the query as the web app sends it.
	ws := "ws" + strings.TrimPrefix(host, "http") + "/sockets/events/" + c.id + "?resend_all=true&session_api_key=" + url.QueryEscape(c.sessionKey)
	s := dialSocket(t, ws, nil)
	if state := s.fullState(); state["id"] != dashed(c.id) {
		t.Fatalf("full state of %v, want the conversation %s", state["id"], c.id)
	}
	wantRefused(t, "ws"+strings.TrimPrefix(host, "http")+"/sockets/events/"+c.id+"?session_api_key=wrong", nil, http.StatusForbidden)

	for _, action := range []string{"pause", "run", "pause"} {
		if st, b := e.callAt("POST", host+"/api/conversations/"+c.id+"/"+action, withKey, nil); st != http.StatusOK {
			t.Fatalf("%s at the root: %d %s", action, st, b)
		}
	}

	st, b := e.callAt("GET", host+"/api/git/changes/"+url.PathEscape(c.ws), withKey, nil)
	if st != http.StatusOK {
		t.Fatalf("git changes at the root: %d %s", st, b)
	}
	if got := changeList(t, b); !slices.Contains(got, "UPDATED mod.txt") {
		t.Errorf("changes %v", got)
	}
	st, b = e.callAt("GET", host+"/api/git/diff/"+url.PathEscape(path.Join(c.ws, "mod.txt")), withKey, nil)
	if st != http.StatusOK || !strings.Contains(string(b), `"original":"one\n"`) {
		t.Errorf("git diff at the root: %d %s", st, b)
	}

	// The prefix of the main server still serves the same conversation.
	e.must("GET", "/agent-server/"+c.sandboxID+"/api/conversations/"+c.id, c.sessionKey, nil, http.StatusOK, nil)

	// The sandbox's URL and the start task lead to the base.
	var sbs []*struct {
		ExposedURLs []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
			Port int    `json:"port"`
		} `json:"exposed_urls"`
	}
	e.must("GET", "/api/v1/sandboxes?id="+c.sandboxID, alice, nil, http.StatusOK, &sbs)
	u := sbs[0].ExposedURLs
	if len(u) != 1 || u[0].Name != "AGENT_SERVER" || u[0].URL != e.agentSrv.URL || u[0].Port == 0 ||
		!strings.HasSuffix(e.agentSrv.URL, ":"+itoa(u[0].Port)) {
		t.Errorf("exposed URLs %+v, want AGENT_SERVER at %s with its port", u, e.agentSrv.URL)
	}
	var tasks struct {
		Items []struct {
			Status         string  `json:"status"`
			AgentServerURL *string `json:"agent_server_url"`
		} `json:"items"`
	}
	e.must("GET", "/api/v1/app-conversations/start-tasks/search", alice, nil, http.StatusOK, &tasks)
	if len(tasks.Items) != 1 || tasks.Items[0].AgentServerURL == nil || *tasks.Items[0].AgentServerURL != e.agentSrv.URL {
		t.Errorf("start tasks %+v, want a READY one with agent_server_url %s", tasks.Items, e.agentSrv.URL)
	}
}

// TestAgentServerBaseSDK follows the SDK's RemoteWorkspace: the host is conversation_url up
// to /api/conversations/, and files go up and down with the session key alone.
func TestAgentServerBaseSDK(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	c := e.startWorkspaceConv(alice)
	host, _, ok := strings.Cut(c.url, "/api/conversations/")
	if !ok {
		t.Fatalf("conversation_url %s", c.url)
	}
	withKey := http.Header{"X-Session-API-Key": {c.sessionKey}}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	fw.Write([]byte("from the SDK"))
	mw.Close()
	up := http.Header{"X-Session-API-Key": {c.sessionKey}, "Content-Type": {mw.FormDataContentType()}}
	target := path.Join(c.ws, "sdk/notes.txt")
	if st, b := e.callAt("POST", host+"/api/file/upload?path="+url.QueryEscape(target), up, &body); st != http.StatusOK {
		t.Fatalf("upload: %d %s", st, b)
	}
	if st, b := e.callAt("GET", host+"/api/file/download?path="+url.QueryEscape(target), withKey, nil); st != http.StatusOK || string(b) != "from the SDK" {
		t.Fatalf("download: %d %q", st, b)
	}

	var info struct {
		ID    string `json:"id"`
		Agent struct {
			LLM   map[string]any   `json:"llm"`
			Tools []map[string]any `json:"tools"`
		} `json:"agent"`
	}
	st, b := e.callAt("GET", host+"/api/conversations/"+dashed(c.id), withKey, nil)
	if st != http.StatusOK || json.Unmarshal(b, &info) != nil || info.Agent.LLM == nil || len(info.Agent.Tools) == 0 {
		t.Fatalf("attach by the dashed id: %d %s", st, b)
	}
	if st, b := e.callAt("GET", host+"/alive", nil, nil); st != http.StatusOK {
		t.Errorf("alive: %d %s", st, b)
	}
	if st, b := e.callAt("GET", host+"/server_info", nil, nil); st != http.StatusOK || !strings.Contains(string(b), `"uptime"`) {
		t.Errorf("server_info: %d %s", st, b)
	}
}

// TestAgentServerBaseKeys: which keys reach which routes of the base.
func TestAgentServerBaseKeys(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	c := e.startAgent(alice, map[string]any{"initial_message": message("hello", false)})
	host := hostOnly(t, c.url)
	conv := host + "/api/conversations/" + c.id
	files := host + "/api/file/list"
	sessionKey := http.Header{"X-Session-API-Key": {c.sessionKey}}
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   int
		says   string
	}{
		{"session key, a conversation route", conv, sessionKey, 200, ""},
		{"owner's key, a conversation route", conv, http.Header{"X-Session-API-Key": {alice}}, 200, ""},
		{"owner's key as bearer, a conversation route", conv, http.Header{"Authorization": {"Bearer " + alice}}, 200, ""},
		{"both keys", conv, http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {c.sessionKey}}, 200, ""},
		{"both keys, the user key wrong", conv, http.Header{"Authorization": {"Bearer nope"}, "X-Session-API-Key": {c.sessionKey}}, 401, ""},
		{"both keys, the session key wrong", conv, http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {"nope"}}, 401, ""},
		{"another user's key", conv, http.Header{"X-Session-API-Key": {bob}}, 404, ""},
		{"no key", conv, nil, 401, ""},
		{"session key, a route without a conversation", files, sessionKey, 200, ""},
		{"owner's key, a route without a conversation", files, http.Header{"X-Session-API-Key": {alice}}, 400, "session key"},
		{"a wrong key, a route without a conversation", files, http.Header{"X-Session-API-Key": {"nope"}}, 401, ""},
		{"unknown route", host + "/api/nothing", sessionKey, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			st, b := e.callAt("GET", tc.url, tc.header, nil)
			if st != tc.want || !strings.Contains(string(b), tc.says) {
				t.Fatalf("%d %s, want %d saying %q", st, b, tc.want, tc.says)
			}
		})
	}

	// On the main server, both headers are each checked for what they are too.
	both := http.Header{"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {c.sessionKey}}
	if st, b := e.callAt("GET", e.srv.URL+"/api/v1/users/me", both, nil); st != http.StatusOK {
		t.Errorf("users/me with both keys: %d %s", st, b)
	}
	if st, b := e.callAt("GET", e.srv.URL+"/agent-server/"+c.sandboxID+"/api/conversations/"+c.id, both, nil); st != http.StatusOK {
		t.Errorf("the prefix with both keys: %d %s", st, b)
	}
	if st, b := e.callAt("GET", e.srv.URL+"/api/v1/users/me", sessionKey, nil); st != http.StatusUnauthorized {
		t.Errorf("users/me with the session key alone: %d %s, want 401", st, b)
	}
}

// TestAgentServerEditor: newer web apps ask the agent server for its VS Code server's status and
// URL; agentd's sandboxes run none, and say so in the shapes OpenHands' agent server answers.
func TestAgentServerEditor(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(alice)
	withKey := http.Header{"X-Session-API-Key": {e.sessionKey(alice, sb)}}
	for _, tc := range []struct {
		name, url string
		header    http.Header
		want      int
		body      string
	}{
		{"url at the base", e.agentSrv.URL + "/api/vscode/url?workspace_dir=/workspace", withKey, 200, `{"url":null}`},
		{"status at the base", e.agentSrv.URL + "/api/vscode/status", withKey, 200, `{"running":false,"enabled":false,"message":"agentd runs no VS Code server in its sandboxes"}`},
		{"url under the prefix, the owner's key", e.srv.URL + "/agent-server/" + sb + "/api/vscode/url", http.Header{"X-Session-API-Key": {alice}}, 200, `{"url":null}`},
		{"another user's sandbox", e.srv.URL + "/agent-server/" + sb + "/api/vscode/url", http.Header{"X-Session-API-Key": {bob}}, 404, ""},
		{"no key", e.agentSrv.URL + "/api/vscode/url", nil, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			st, b := e.callAt("GET", tc.url, tc.header, nil)
			if st != tc.want || tc.body != "" && strings.TrimSpace(string(b)) != tc.body {
				t.Fatalf("%d %s, want %d %s", st, b, tc.want, tc.body)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
