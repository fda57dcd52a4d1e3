package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/httpapi"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// The test binary doubles as `agentd runtime` for the sandboxes these tests start.
func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }

const adminKey = "test-admin-key-0123456789"

// env is a whole agentd serve (SQLite, process sandboxes, every service, the web app) behind
// an httptest server, built by the same app.New the binary uses. A restart swaps the app
// behind the same address, as a restarted server on the same port.
type env struct {
	t       *testing.T
	cfg     config.Config
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	app     *apptest.Server
	backend *process.Backend
	logs    *logBuffer
	// github is the GitHub API double the server's github_api_url leads to.
	github *providertest.Server
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := sandboxtest.ShortDir(t)
	cfg, err := config.Load([]string{"--data-dir", dir, "--admin-key", adminKey, "--sandbox-backend", "process"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Specs = []config.SpecConfig{{ID: "default", InitialEnv: map[string]string{sandboxtest.EnvRuntime: "1"}}}
	cfg.AgentServerAddr, cfg.AgentServerPublicURL = "", ""
	// Conversations keep their first title: a title call would take a step of the scripted
	// models, in any order beside the agent's.
	cfg.ConversationTitles = "off"
	// Users' scripted models listen on loopback.
	cfg.AllowInternal = []string{"127.0.0.0/8"}
	e := &env{t: t, cfg: cfg, logs: &logBuffer{}, github: providertest.NewGitHub(t)}
	e.cfg.GitHubAPIURL = e.github.APIURL()
	e.srv = httptest.NewUnstartedServer(nil)
	e.srv.Config = httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*e.handler.Load()).ServeHTTP(w, r)
	}), nil)
	e.srv.Listener = httpapi.JSONRefusals(e.srv.Listener)
	e.srv.Start()
	e.cfg.PublicURL = e.srv.URL
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		e.stop()
		b := e.newBackend()
		insts, _ := b.List(context.Background())
		for _, inst := range insts {
			b.Destroy(context.Background(), inst)
		}
		b.Close()
		sandboxtest.CheckNoChildren(t)
	})
	e.start()
	return e
}

func (e *env) newBackend() *process.Backend {
	b, err := process.New(process.Options{Root: filepath.Join(e.cfg.DataDir, "sandboxes", "process"), Binary: sandboxtest.Binary(e.t)})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) start() {
	e.t.Helper()
	e.backend = e.newBackend()
	a, err := apptest.Start(context.Background(), app.Options{Config: e.cfg, Backend: e.backend, Version: "test",
		LLMRetry: llm.RetryPolicy{MaxAttempts: 1}, SandboxWatchInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		e.backend.Close()
		e.t.Fatal(err)
	}
	e.app = a
	h := a.Handler()
	e.handler.Store(&h)
}

func (e *env) stop() {
	if e.app != nil {
		e.app.Close()
		e.backend.Close()
		e.app = nil
	}
}

// restart stops the server and starts a new one on the same data directory and address.
func (e *env) restart() {
	e.stop()
	e.start()
}

// call sends a request with an API key and returns the status and body.
func (e *env) call(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Session-API-Key", key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, data
}

func (e *env) must(method, path, key string, body any, want int, out any) {
	e.t.Helper()
	status, data := e.call(method, path, key, body)
	if status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// scripted starts a scripted OpenAI-compatible model and points the user's settings at it.
func (e *env) scripted(key string, steps ...llmtest.Step) *llmtest.Server {
	e.t.Helper()
	srv := llmtest.NewOpenAI(e.t, steps...)
	e.must("POST", "/api/settings", key, map[string]any{
		"llm_model": "gpt-4o", "llm_base_url": srv.URL(), "llm_api_key": llmtest.APIKey,
	}, http.StatusOK, nil)
	return srv
}

// eventually polls cond until it holds, for at most a minute.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
