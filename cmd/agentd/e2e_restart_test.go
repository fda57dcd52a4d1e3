package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
)

const restartAdminKey = "restart-admin-key-0123456789"

// world is what populate stored through the API.
type world struct {
	userKey          string
	running, paused  string // sandbox ids
	convV1, convV0   string // conversation ids
	convSandboxes    []string
	runningPID       int // the runtime process of the running sandbox
	pausedPID        int
	llmModel, ghHost string
}

func (w world) sandboxIDs() []string {
	return append([]string{w.running, w.paused}, w.convSandboxes...)
}

func (w world) convIDs() []string { return []string{w.convV1, w.convV0} }

// populate stores one of everything: a second user with a key, settings with a secret, a
// provider token, a running and a paused sandbox, and a V1 and a V0 conversation, each started.
func populate(t *testing.T, s *server, admin *client) world {
	t.Helper()
	// A GitHub Enterprise host on loopback that knows the token, as agentd checks it.
	ghe := providertest.NewGitHub(t)
	ghe.AddUser("ghp_e2e_token", providertest.User{Login: "admin"})
	w := world{llmModel: "gpt-e2e", ghHost: ghe.Root()}
	var bob userInfo
	admin.do("POST", "/api/v1/users", map[string]any{"name": "bob"}, http.StatusCreated, &bob)
	var created struct {
		Key string `json:"key"`
	}
	admin.do("POST", "/api/keys", map[string]any{"name": "bob-key", "user_id": bob.ID}, http.StatusCreated, &created)
	w.userKey = created.Key
	admin.do("POST", "/api/settings", map[string]any{"llm_model": w.llmModel, "llm_api_key": "sk-e2e-secret"}, http.StatusOK, nil)
	admin.do("POST", "/api/add-git-providers", map[string]any{"provider_tokens": map[string]any{
		"github": map[string]any{"token": "ghp_e2e_token", "host": w.ghHost}}}, http.StatusOK, nil)

	w.running = admin.startSandbox().ID
	w.paused = admin.startSandbox().ID
	admin.do("POST", "/api/v1/sandboxes/"+w.paused+"/pause", nil, http.StatusOK, nil)
	w.runningPID = runtimePID(t, s.dir, w.running)
	w.pausedPID = runtimePID(t, s.dir, w.paused)

	task := admin.waitTaskReady(admin.startConversationV1("hello from V1").ID)
	w.convV1 = *task.AppConversationID
	w.convV0 = admin.createConversationV0("hello from V0")
	waitFor(t, 20*time.Second, "the V0 conversation's start task READY", func() (bool, string) {
		task = admin.tasksOf()[w.convV0]
		return task.Status == "READY", "status " + task.Status
	})
	for _, id := range w.convIDs() {
		w.convSandboxes = append(w.convSandboxes, *admin.tasksOf()[id].SandboxID)
	}
	return w
}

// checkWorld asserts what populate stored, as the API shows it.
func checkWorld(t *testing.T, s *server, w world) {
	t.Helper()
	admin, bob := s.client(restartAdminKey), s.client(w.userKey)
	if me := admin.me(); !me.IsAdmin {
		t.Errorf("admin: %+v", me)
	}
	if me := bob.me(); me.Name != "bob" || me.IsAdmin {
		t.Errorf("bob: %+v", me)
	}
	var settings struct {
		LLMModel          string             `json:"llm_model"`
		LLMAPIKey         *string            `json:"llm_api_key"`
		LLMAPIKeySet      bool               `json:"llm_api_key_set"`
		ProviderTokensSet map[string]*string `json:"provider_tokens_set"`
	}
	admin.do("GET", "/api/settings", nil, http.StatusOK, &settings)
	if settings.LLMModel != w.llmModel || settings.LLMAPIKey != nil || !settings.LLMAPIKeySet {
		t.Errorf("settings: %+v", settings)
	}
	if h := settings.ProviderTokensSet["github"]; len(settings.ProviderTokensSet) != 1 || h == nil || *h != w.ghHost {
		t.Errorf("provider_tokens_set: %v", settings.ProviderTokensSet)
	}
	for id, want := range map[string]string{w.running: "RUNNING", w.paused: "PAUSED", w.convSandboxes[0]: "RUNNING", w.convSandboxes[1]: "RUNNING"} {
		sb := admin.sandbox(id)
		if sb.Status != want || (sb.SessionAPIKey != nil) != (want == "RUNNING") {
			t.Errorf("sandbox %s: status %s, session key set %v; want %s", id, sb.Status, sb.SessionAPIKey != nil, want)
		}
	}
	tasks := admin.tasksOf()
	for _, id := range w.convIDs() {
		if tasks[id].Status != "READY" {
			t.Errorf("start task of conversation %s: %+v", id, tasks[id])
		}
	}
	_, v1 := admin.call("GET", "/api/v1/app-conversations/search", nil)
	_, v0 := admin.call("GET", "/api/conversations", nil)
	if got := itemsByID(t, v1, "items", "id", w.convIDs()); len(got) != 2 {
		t.Errorf("V1 search lists %d of the 2 conversations: %s", len(got), v1)
	}
	if got := itemsByID(t, v0, "results", "conversation_id", w.convIDs()); len(got) != 2 {
		t.Errorf("V0 list lists %d of the 2 conversations: %s", len(got), v0)
	}
	// bob owns nothing of the admin's.
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	bob.do("GET", "/api/v1/sandboxes/search", nil, http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Errorf("bob sees %d sandboxes", len(page.Items))
	}
}

// snapshot reads everything of w the API shows, canonically encoded, by what was read.
func snapshot(t *testing.T, s *server, w world) map[string]string {
	t.Helper()
	admin, bob := s.client(restartAdminKey), s.client(w.userKey)
	// URLs handed to clients start with the server's address or its agent-server base's, which
	// a restart changes.
	agentURL := s.logged("agent_server_url")
	if agentURL == "" {
		t.Fatalf("the server logged no agent_server_url:\n%s", s.stderr)
	}
	u, err := url.Parse(agentURL)
	if err != nil {
		t.Fatal(err)
	}
	agentPort := u.Port()
	get := func(c *client, path string) []byte {
		b := c.do("GET", path, nil, http.StatusOK, nil)
		b = bytes.ReplaceAll(b, []byte(agentURL), []byte("http://agent-server"))
		for _, end := range []string{",", "}"} {
			b = bytes.ReplaceAll(b, []byte(`"port":`+agentPort+end), []byte(`"port":0`+end))
		}
		return bytes.ReplaceAll(b, []byte(s.url), []byte("http://agentd"))
	}
	settleAgents(t, admin)
	ids := func(key string, vals []string) string {
		q := url.Values{key: vals}
		return q.Encode()
	}
	snap := map[string]string{
		"admin":     canonical(t, get(admin, "/api/v1/users/me")),
		"bob":       canonical(t, get(bob, "/api/v1/users/me")),
		"settings":  canonical(t, get(admin, "/api/settings")),
		"specs":     canonical(t, get(admin, "/api/v1/sandbox-specs/search")),
		"sandboxes": canonical(t, get(admin, "/api/v1/sandboxes?"+ids("id", w.sandboxIDs()))),
		"v1 get":    canonical(t, get(admin, "/api/v1/app-conversations?"+ids("ids", w.convIDs()))),
	}
	for _, l := range []struct{ name, path, key, idKey string }{
		{"v1 search", "/api/v1/app-conversations/search", "items", "id"},
		{"v0 list", "/api/conversations", "results", "conversation_id"},
		{"start tasks", "/api/v1/app-conversations/start-tasks/search", "items", "app_conversation_id"},
	} {
		for id, item := range itemsByID(t, get(admin, l.path), l.key, l.idKey, w.convIDs()) {
			snap[l.name+" "+id] = item
		}
	}
	for _, id := range w.convIDs() {
		snap["v0 get "+id] = canonical(t, get(admin, "/api/conversations/"+id))
	}
	return snap
}

func compareSnapshots(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, b := range before {
		if a, ok := after[k]; !ok {
			t.Errorf("%s: gone after the restart", k)
		} else if a != b {
			t.Errorf("%s changed over the restart:\nbefore %s\nafter  %s", k, b, a)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: new after the restart", k)
		}
	}
}

// gatedSpecs writes a config file whose default spec starts the runtime only once the file
// gate is gone, so that a test can hold a sandbox in STARTING (and its start task unfinished)
// for as long as it likes. It keeps no warm pool: a pooled sandbox, started before the gate
// was closed, would not wait behind it.
func gatedSpecs(t *testing.T) (configFile, gate string) {
	t.Helper()
	tmp := t.TempDir()
	configFile, gate = filepath.Join(tmp, "agentd.toml"), filepath.Join(tmp, "gate")
	toml := fmt.Sprintf(`sandbox_pool = "0"

[[sandbox_specs]]
id = "default"
description = "The runtime, once the test opens the gate."
command = ["/bin/sh", "-c", 'while [ -e "$E2E_GATE" ]; do sleep 0.01; done; exec "$0" runtime "$@"', '%s']
initial_env = { E2E_GATE = '%s' }
`, agentdBin, gate)
	if err := os.WriteFile(configFile, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return configFile, gate
}

// TestRestartKeepsEverything: users, keys, settings, tokens, specs, sandboxes (adopted with
// their runtimes) and conversations survive a graceful stop and a kill -9 alike; a start task
// that was still waiting for its sandbox when the server went down finishes after the restart.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		name := "SIGTERM"
		if crash {
			name = "SIGKILL"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			configFile, gate := gatedSpecs(t)
			env := []string{"AGENTD_ADMIN_KEY=" + restartAdminKey, "AGENTD_CONFIG=" + configFile}
			s := startServer(t, dir, env)
			admin := s.client(restartAdminKey)
			w := populate(t, s, admin)
			checkWorld(t, s, w)
			before := snapshot(t, s, w)
			runningKey := *admin.sandbox(w.running).SessionAPIKey

			// A conversation whose sandbox cannot come up before the server goes down.
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			late := admin.startConversationV1("cut short")
			if crash {
				s.kill()
				// See TestKilledServerReleasesDataDir: a child forked by the killed server
				// may hold the data dir's lock for a moment.
				if took := waitDataDirFree(t, dir); took > 0 {
					t.Logf("the data dir was locked for %v after the kill", took)
				}
			} else {
				// stop fails after 20s: a server that waited for the gated sandbox (30s start
				// timeout) would not exit by then.
				if code, _ := s.stop(); code != 0 {
					t.Errorf("exit code after SIGTERM: %d, want 0", code)
				}
				if !strings.Contains(s.stderr.String(), "shutting down") {
					t.Errorf("no shutdown in the log:\n%s", s.stderr)
				}
			}

			s2 := startServer(t, dir, env)
			admin = s2.client(restartAdminKey)
			checkWorld(t, s2, w)
			compareSnapshots(t, before, snapshot(t, s2, w))

			// The runtimes were adopted, not restarted, and answer with the key they had.
			if !alive(w.runningPID) || !alive(w.pausedPID) {
				t.Fatalf("a runtime died over the restart")
			}
			if got := runtimePID(t, dir, w.running); got != w.runningPID {
				t.Errorf("running sandbox's runtime is pid %d, was %d", got, w.runningPID)
			}
			if k := admin.sandbox(w.running).SessionAPIKey; k == nil || *k != runningKey {
				t.Errorf("running sandbox's session key changed over the restart")
			}
			if id, err := admin.runtimeClient(w.running).Identity(t.Context()); err != nil || id.SandboxID != w.running {
				t.Errorf("runtime of the running sandbox: %+v, %v", id, err)
			}
			// Pause and resume work on both adopted sandboxes.
			admin.do("POST", "/api/v1/sandboxes/"+w.running+"/pause", nil, http.StatusOK, nil)
			if sb := admin.sandbox(w.running); sb.Status != "PAUSED" {
				t.Errorf("after pause: %s", sb.Status)
			}
			for _, id := range []string{w.running, w.paused} {
				admin.do("POST", "/api/v1/sandboxes/"+id+"/resume", nil, http.StatusOK, nil)
				if sb := admin.sandbox(id); sb.Status != "RUNNING" {
					t.Errorf("sandbox %s after resume: %s", id, sb.Status)
				}
				res, err := admin.runtimeClient(id).Run(t.Context(), runtimeCommand("echo ok"))
				if err != nil || strings.TrimSpace(res.Output) != "ok" {
					t.Errorf("command in sandbox %s after resume: %+v, %v", id, res, err)
				}
			}

			// The conversation created just before the stop exists, its start task waits, and
			// it finishes once its sandbox can start.
			if task := admin.task(late.ID); task.Status == "READY" || task.Status == "ERROR" {
				t.Fatalf("start task behind the gate: %s (%s)", task.Status, deref(task.Detail))
			}
			var count int
			admin.do("GET", "/api/v1/app-conversations/count", nil, http.StatusOK, &count)
			if count != 3 {
				t.Errorf("%d conversations after the restart, want 3", count)
			}
			if err := os.Remove(gate); err != nil {
				t.Fatal(err)
			}
			task := admin.waitTaskReady(late.ID)
			conv := *task.AppConversationID
			var got []*struct {
				ID                 string `json:"id"`
				SandboxID          string `json:"sandbox_id"`
				ConversationStatus string `json:"conversation_status"`
			}
			admin.do("GET", "/api/v1/app-conversations?ids="+conv, nil, http.StatusOK, &got)
			if len(got) != 1 || got[0] == nil || got[0].SandboxID != *task.SandboxID || got[0].ConversationStatus != "RUNNING" {
				t.Fatalf("conversation %s: %+v", conv, got)
			}
			if sb := admin.sandbox(got[0].SandboxID); sb.Status != "RUNNING" {
				t.Errorf("its sandbox: %s", sb.Status)
			}
			admin.do("GET", "/api/conversations/"+conv, nil, http.StatusOK, nil)
			if code, _ := s2.stop(); code != 0 {
				t.Errorf("second server exited %d", code)
			}
		})
	}
}
