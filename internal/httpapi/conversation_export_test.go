package httpapi_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// canonicalJSON re-encodes a JSON document so that equal documents compare equal.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestDownloadTrajectory: the download is OpenHands' zip, meta.json and one file per event in
// log order, each event as the events API serves it, with more events than one read of the
// store; it holds no session key; nobody else downloads it.
func TestDownloadTrajectory(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.scripted(alice, terminal(t, "echo traced"), llmtest.Text("Done."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("trace me", true)})
	c.waitStatus("finished")
	// More events than the download reads at a time.
	for i := range 230 {
		c.api("POST", "/events", message(fmt.Sprintf("note %d", i), false), http.StatusOK, nil)
	}
	_, events := c.rawEvents("")

	path := "/api/v1/app-conversations/" + dashed(c.id) + "/download"
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	req.Header.Set("X-Session-API-Key", alice)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/zip" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="conversation_`+c.id+`.zip"` {
		t.Fatalf("download answered %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
	}
	if bytes.Contains(body, []byte(c.sessionKey)) {
		t.Error("the zip holds the sandbox's session key")
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	files := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = b
		names = append(names, f.Name)
	}
	var meta map[string]any
	if err := json.Unmarshal(files["meta.json"], &meta); err != nil {
		t.Fatalf("meta.json %s: %v", files["meta.json"], err)
	}
	if meta["id"] != c.id || meta["title"] == nil || meta["session_api_key"] != nil || meta["conversation_url"] != nil {
		t.Errorf("meta.json %v", meta)
	}
	if len(names) != len(events)+1 || len(events) < 230 {
		t.Fatalf("%d files for %d events", len(names), len(events))
	}
	for i, raw := range events {
		var ev struct {
			ID string `json:"id"`
		}
		json.Unmarshal(raw, &ev)
		name := fmt.Sprintf("event_%06d_%s.json", i, ev.ID)
		got, ok := files[name]
		if !ok {
			t.Fatalf("no %s among %v", name, names[:min(5, len(names))])
		}
		if canonicalJSON(t, got) != canonicalJSON(t, raw) {
			t.Fatalf("%s:\n%s\nwant the event as the API serves it:\n%s", name, got, raw)
		}
	}

	if status, _ := e.call("GET", path, bob, nil); status != http.StatusNotFound {
		t.Errorf("bob downloads alice's conversation: %d", status)
	}
	if status, _ := e.call("GET", path, "", nil); status != http.StatusUnauthorized {
		t.Errorf("download without a key: %d", status)
	}
	if status, _ := e.call("GET", "/api/v1/app-conversations/"+strings.Repeat("a", 101)+"/download", alice, nil); status != http.StatusBadRequest {
		t.Errorf("download of a malformed id: %d", status)
	}
}

// TestConversationSkillsAndHooks: the skills route lists what the agent is given, in
// OpenHands' shape (task skills are knowledge skills); the hooks route answers agentd's none.
func TestConversationSkillsAndHooks(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.scripted(alice, llmtest.Text("Hi."))
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "style", "content": "Answer briefly."}, http.StatusCreated, nil)
	sb := e.runningSandbox(alice)
	e.writeProject(alice, sb, map[string]string{
		"AGENTS.md":                        "Run make check.",
		".openhands/microagents/deploy.md": "---\nname: deploy\ntriggers:\n  - deploy\n---\nUse make deploy.",
		".openhands/microagents/release.md": "---\nname: release\ninputs:\n  - name: VERSION\n    description: the version\n---\n" +
			"Tag ${VERSION}.",
	})
	c := e.startAgent(alice, map[string]any{"sandbox_id": sb, "initial_message": message("hello", true)})
	c.waitStatus("finished")

	var got struct {
		Skills []struct {
			Name     string   `json:"name"`
			Type     string   `json:"type"`
			Content  string   `json:"content"`
			Triggers []string `json:"triggers"`
		} `json:"skills"`
	}
	path := "/api/v1/app-conversations/" + c.id
	e.must("GET", path+"/skills", alice, nil, http.StatusOK, &got)
	byName := map[string]string{}
	for _, s := range got.Skills {
		if s.Triggers == nil {
			t.Errorf("skill %s: triggers null, want a list", s.Name)
		}
		byName[s.Name] = s.Type + " " + strings.Join(s.Triggers, ",") + " " + strings.TrimSpace(s.Content)
	}
	want := map[string]string{
		"style":   "repo  Answer briefly.",
		"deploy":  "knowledge deploy Use make deploy.",
		"release": "knowledge /release",
	}
	for name, w := range want {
		if g := byName[name]; !strings.HasPrefix(g, w) {
			t.Errorf("skill %s: %q, want it to start with %q (all: %v)", name, g, w, byName)
		}
	}
	if !slices.ContainsFunc(got.Skills, func(s struct {
		Name     string   `json:"name"`
		Type     string   `json:"type"`
		Content  string   `json:"content"`
		Triggers []string `json:"triggers"`
	}) bool {
		return s.Type == "repo" && strings.Contains(s.Content, "Run make check.")
	}) {
		t.Errorf("AGENTS.md is not among the skills: %v", byName)
	}

	// The stored set answers while the sandbox is paused too.
	e.must("POST", "/api/v1/sandboxes/"+sb+"/pause", alice, nil, http.StatusOK, nil)
	var paused struct {
		Skills []json.RawMessage `json:"skills"`
	}
	e.must("GET", path+"/skills", alice, nil, http.StatusOK, &paused)
	if len(paused.Skills) != len(got.Skills) {
		t.Errorf("%d skills while paused, %d before", len(paused.Skills), len(got.Skills))
	}

	if body := e.must("GET", path+"/hooks", alice, nil, http.StatusOK, nil); canonicalJSON(t, body) != `{"hooks":[]}` {
		t.Errorf("hooks %s", body)
	}
	for _, sub := range []string{"/skills", "/hooks"} {
		if status, _ := e.call("GET", path+sub, bob, nil); status != http.StatusNotFound {
			t.Errorf("bob reads %s: %d, want 404", sub, status)
		}
		if status, _ := e.call("GET", "/api/v1/app-conversations/"+strings.Repeat("a", 101)+sub, alice, nil); status != http.StatusBadRequest {
			t.Errorf("%s of a malformed id: %d, want 400", sub, status)
		}
	}
}
