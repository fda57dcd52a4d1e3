package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestAgentServerSkills follows the SDK's workspace loading skills from its agent server
// (POST /api/skills) before it starts a conversation: the owner's own skills and the skill
// files of the project directory, merged, a project skill winning over a user skill of the
// same name.
func TestAgentServerSkills(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "mine", "content": "USER-ALWAYS: answer briefly."}, http.StatusCreated, nil)
	e.must("POST", "/api/v1/skills", alice, map[string]any{"name": "deploy", "content": "USER-DEPLOY", "triggers": []string{"ship"}}, http.StatusCreated, nil)
	sb := e.runningSandbox(alice)
	e.writeWorkspace(alice, sb, map[string]string{
		"project/AGENTS.md":                "REPO-GUIDANCE: run make check.",
		"project/.agents/skills/deploy.md": "---\nname: deploy\ndescription: How to deploy\ntriggers:\n  - deploy\n---\nPROJECT-DEPLOY: make deploy.",
		"AGENTS.md":                        "ROOT-GUIDANCE",
	})
	rt, err := e.app.Sandboxes.Client(context.Background(), e.userIDOf(alice), sb)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	session := http.Header{"X-Session-API-Key": {e.sessionKey(alice, sb)}, "Content-Type": {"application/json"}}
	post := func(t *testing.T, url string, h http.Header, body any, want int) []byte {
		t.Helper()
		b, _ := json.Marshal(body)
		st, answer := e.callAt("POST", url, h, bytes.NewReader(b))
		if st != want {
			t.Fatalf("POST %s %s: %d %s, want %d", url, b, st, answer, want)
		}
		return answer
	}
	type skillsJSON struct {
		Skills []struct {
			Name        string   `json:"name"`
			Type        string   `json:"type"`
			Content     string   `json:"content"`
			Triggers    []string `json:"triggers"`
			Source      *string  `json:"source"`
			Description *string  `json:"description"`
		} `json:"skills"`
		Sources map[string]int `json:"sources"`
	}

	// As the SDK's RemoteWorkspace asks: no public or org skills, the project's.
	var got skillsJSON
	answer := post(t, e.agentSrv.URL+"/api/skills", session, map[string]any{"load_public": false, "load_user": true,
		"load_project": true, "load_org": false, "project_dir": id.Workspace + "/project", "sandbox_config": nil}, 200)
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, s := range got.Skills {
		byName[s.Name] = strings.Join([]string{s.Type, s.Content, strings.Join(s.Triggers, ","), deref(s.Source), deref(s.Description)}, "|")
	}
	want := map[string]string{
		"mine":   "repo|USER-ALWAYS: answer briefly.||user|",
		"agents": "repo|REPO-GUIDANCE: run make check.||project/AGENTS.md|",
		"deploy": "knowledge|PROJECT-DEPLOY: make deploy.|deploy|project/.agents/skills/deploy.md|How to deploy",
	}
	if !reflect.DeepEqual(byName, want) {
		t.Errorf("skills %v\nwant %v", byName, want)
	}
	if s := got.Sources; s["user"] != 2 || s["project"] != 2 || s["public"] != 0 || s["org"] != 0 || s["sandbox"] != 0 {
		t.Errorf("sources %v", s)
	}

	// The defaults load the user's skills and those at the workspace's root.
	answer = post(t, e.agentSrv.URL+"/api/skills", session, map[string]any{}, 200)
	if !strings.Contains(string(answer), "ROOT-GUIDANCE") || !strings.Contains(string(answer), "USER-DEPLOY") || strings.Contains(string(answer), "PROJECT-DEPLOY") {
		t.Errorf("skills with the defaults: %s", answer)
	}

	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		body   any
		want   int
	}{
		{"a project outside the workspace", e.agentSrv.URL + "/api/skills", session, map[string]any{"project_dir": "/etc"}, 422},
		{"a malformed body", e.agentSrv.URL + "/api/skills", session, map[string]any{"load_user": "yes"}, 422},
		{"under the prefix with the owner's key", e.srv.URL + "/agent-server/" + sb + "/api/skills", http.Header{"X-Session-API-Key": {alice}}, map[string]any{}, 200},
		{"another user's sandbox", e.srv.URL + "/agent-server/" + sb + "/api/skills", http.Header{"X-Session-API-Key": {bob}}, map[string]any{}, 404},
		{"no key", e.agentSrv.URL + "/api/skills", nil, map[string]any{}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := post(t, tc.url, tc.header, tc.body, tc.want)
			if tc.want == 422 && !strings.Contains(string(b), `"loc"`) {
				t.Errorf("a 422 without a location: %s", b)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
