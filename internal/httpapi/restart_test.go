package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
)

// snapshot reads path as generic JSON, for before/after comparisons.
func (e *env) snapshot(key, path string) any {
	e.t.Helper()
	var v any
	e.must("GET", path, key, nil, http.StatusOK, &v)
	return v
}

func TestRestartPersistence(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	var second keyJSON
	e.must("POST", "/api/keys", alice, map[string]any{"name": "second"}, http.StatusCreated, &second)

	e.repo(alice, "github", "octo/widgets")
	task, conv := e.newConversation(alice, map[string]any{"title": "survivor", "selected_repository": "octo/widgets"})
	running := conv.SandboxID
	e.run(alice, running, "echo before > note")
	runningPID := e.runtimePID(running)
	runningKey := *e.getSandbox(alice, running).SessionAPIKey

	paused := e.runningSandbox(alice)
	marker := "counter-" + paused
	e.startCounter(alice, paused, marker)
	e.must("POST", "/api/v1/sandboxes/"+paused+"/pause", alice, nil, http.StatusOK, nil)
	pausedCount := e.counter(paused)

	e.must("POST", "/api/settings", alice, map[string]any{"llm_model": "test-model", "llm_api_key": "sk-secret-value"}, http.StatusOK, nil)
	// A GitHub Enterprise host, where the token is good too.
	ghe := providertest.NewGitHub(t)
	ghe.AddUser("ghp_secret_value", providertest.User{Login: "alice"})
	e.must("POST", "/api/add-git-providers", alice, map[string]any{
		"provider_tokens": map[string]any{"github": map[string]any{"token": "ghp_secret_value", "host": ghe.Root()}},
	}, http.StatusOK, nil)

	reads := []string{
		"/api/v1/users/me",
		"/api/keys",
		"/api/settings",
		"/api/v1/sandbox-specs/search",
		"/api/v1/sandboxes?id=" + paused,
		"/api/v1/app-conversations/search",
		"/api/v1/app-conversations/start-tasks/search",
		"/api/conversations",
	}
	before := map[string]any{}
	for _, p := range reads {
		before[p] = e.snapshot(alice, p)
	}

	e.restart()

	t.Run("keys still work", func(t *testing.T) {
		e := e.in(t)
		for _, k := range []string{alice, *second.Key} {
			if u := e.me(k); u.ID != aliceID {
				t.Fatalf("key answers user %s, want alice", u.ID)
			}
		}
		if u := e.me(adminKey); !u.IsAdmin {
			t.Fatal("the admin key is no longer an admin's")
		}
	})

	t.Run("everything reads as before", func(t *testing.T) {
		e := e.in(t)
		for _, p := range reads {
			if after := e.snapshot(alice, p); !reflect.DeepEqual(after, before[p]) {
				b, _ := json.Marshal(before[p])
				a, _ := json.Marshal(after)
				t.Errorf("%s changed over the restart:\nbefore %s\n after %s", p, b, a)
			}
		}
	})

	t.Run("settings and tokens", func(t *testing.T) {
		e := e.in(t)
		var s struct {
			LLMModel          *string            `json:"llm_model"`
			LLMAPIKey         *string            `json:"llm_api_key"`
			LLMAPIKeySet      bool               `json:"llm_api_key_set"`
			ProviderTokensSet map[string]*string `json:"provider_tokens_set"`
		}
		body := e.must("GET", "/api/settings", alice, nil, http.StatusOK, &s)
		if s.LLMModel == nil || *s.LLMModel != "test-model" || s.LLMAPIKey != nil || !s.LLMAPIKeySet {
			t.Fatalf("settings after restart: %s", body)
		}
		if h, ok := s.ProviderTokensSet["github"]; !ok || h == nil || *h != ghe.Root() || len(s.ProviderTokensSet) != 1 {
			t.Fatalf("provider_tokens_set after restart: %s", body)
		}
		if strings.Contains(string(body), "sk-secret-value") || strings.Contains(string(body), "ghp_secret_value") {
			t.Fatalf("settings show a secret: %s", body)
		}
	})

	t.Run("the running sandbox is adopted", func(t *testing.T) {
		e := e.in(t)
		sb := e.getSandbox(alice, running)
		if sb == nil || sb.Status != "RUNNING" || sb.SessionAPIKey == nil || *sb.SessionAPIKey != runningKey {
			t.Fatalf("running sandbox after restart: %+v; want RUNNING with the same key", sb)
		}
		if pid := e.runtimePID(running); pid != runningPID {
			t.Fatalf("runtime pid %d after restart, want %d: the sandbox was restarted, not adopted", pid, runningPID)
		}
		if out := e.run(alice, running, "cat note"); out != "before\n" {
			t.Fatalf("the sandbox's workspace reads %q after restart", out)
		}
		c := e.getConversation(alice, conv.ID)
		if c == nil || c.SandboxStatus != "RUNNING" || c.ConversationStatus != "RUNNING" || c.SessionAPIKey == nil || *c.SessionAPIKey != runningKey {
			t.Fatalf("conversation after restart: %+v", c)
		}
		if got := e.getTask(alice, task.ID); got == nil || got.Status != "READY" || *got.AppConversationID != conv.ID {
			t.Fatalf("start task after restart: %+v", got)
		}
	})

	t.Run("the paused sandbox stays paused, then resumes", func(t *testing.T) {
		e := e.in(t)
		if s := e.sandboxStatus(alice, paused); s != "PAUSED" {
			t.Fatalf("paused sandbox reads %q after restart", s)
		}
		wantStopped(t, "counter-"+paused)
		if n := e.counter(paused); n != pausedCount {
			t.Fatalf("counter went from %d to %d while paused over a restart", pausedCount, n)
		}
		e.must("POST", "/api/v1/sandboxes/"+paused+"/resume", alice, nil, http.StatusOK, nil)
		if s := e.sandboxStatus(alice, paused); s != "RUNNING" {
			t.Fatalf("resumed sandbox reads %q", s)
		}
		e.eventually("counter advancing after resume", func() bool { return e.counter(paused) > pausedCount+2 })
		if out := e.run(alice, paused, "echo thawed"); out != "thawed\n" {
			t.Fatalf("resumed sandbox answered %q", out)
		}
	})
}

// killRuntime SIGKILLs a sandbox's runtime from the host and waits until it is gone.
func (e *env) killRuntime(id string) {
	e.t.Helper()
	pid := e.runtimePID(id)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	socket := "unix:" + filepath.Join(e.sandboxDir(id), "runtime.sock")
	e.eventually("runtime gone", func() bool { return len(processesMatching(e.t, socket)) == 0 })
}

// checkMissing checks a sandbox whose processes died, and the conversation on it.
func checkMissing(t *testing.T, e *env, key, sandboxID, convID string) {
	t.Helper()
	sb := e.getSandbox(key, sandboxID)
	if sb == nil || sb.Status != "MISSING" || sb.SessionAPIKey != nil || sb.Detail == nil || *sb.Detail == "" {
		t.Fatalf("sandbox after its runtime died: %+v; want MISSING with a detail and no key", sb)
	}
	c := e.getConversation(key, convID)
	if c == nil || c.SandboxStatus != "MISSING" || c.ConversationStatus != "STOPPED" || c.SessionAPIKey != nil {
		t.Fatalf("conversation after its runtime died: %+v; want sandbox_status MISSING, STOPPED", c)
	}
	for _, op := range []string{"pause", "resume"} {
		status, body := e.call("POST", "/api/v1/sandboxes/"+sandboxID+"/"+op, key, nil)
		if status != http.StatusConflict {
			t.Fatalf("%s of a MISSING sandbox: %d %s, want 409", op, status, body)
		}
		wantDetail(t, body, "MISSING")
	}
	task := e.startConversation(key, map[string]any{"sandbox_id": sandboxID})
	failed := e.waitTask(key, task.ID, "ERROR")
	if failed.Detail == nil || !strings.Contains(*failed.Detail, "MISSING") {
		t.Fatalf("a start on the MISSING sandbox failed with %v, want a detail that says MISSING", strOrNil(failed.Detail))
	}
	e.must("DELETE", "/api/v1/sandboxes/"+sandboxID, key, nil, http.StatusOK, nil)
	if _, err := os.Stat(e.sandboxDir(sandboxID)); !os.IsNotExist(err) {
		t.Fatalf("directory of the deleted sandbox: %v, want it gone", err)
	}
}

func TestRestartKilledRuntime(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, conv := e.newConversation(alice, map[string]any{})
	e.killRuntime(conv.SandboxID)
	e.restart()
	checkMissing(t, e, alice, conv.SandboxID, conv.ID)
}

func TestWatcherMarksMissing(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, conv := e.newConversation(alice, map[string]any{})
	e.killRuntime(conv.SandboxID)
	// The watcher looks every sandbox.DefaultWatchInterval (5 s); eventually allows 20 s.
	e.waitSandbox(alice, conv.SandboxID, "MISSING")
	checkMissing(t, e, alice, conv.SandboxID, conv.ID)
}

func TestRestartDuringStart(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	task := e.startConversation(alice, map[string]any{})
	e.restart()
	ready := e.waitTask(alice, task.ID, "READY")
	c := e.getConversation(alice, *ready.AppConversationID)
	if c == nil || c.SandboxStatus != "RUNNING" || c.SandboxID != *ready.SandboxID {
		t.Fatalf("conversation after a restart during its start: %+v", c)
	}
	var page sandboxPageJSON
	e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].ID != c.SandboxID {
		t.Fatalf("sandboxes after a restart during a start: %+v; want only the conversation's", page.Items)
	}
}
