package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/httpapi"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// TestReadiness: /health and /ready answer OK while the store and the sandbox backend work;
// when the backend's directory goes away they answer 503 saying so (in words that name no
// host path), /alive stays 200, and once the directory is back they are ready again.
func TestReadiness(t *testing.T) {
	e := newEnv(t)
	var ready apitypes.ReadinessResponse
	if body := e.must("GET", "/health", "", nil, http.StatusOK, nil); strings.TrimSpace(string(body)) != `"OK"` {
		t.Fatalf("GET /health: %s, want \"OK\"", body)
	}
	e.must("GET", "/ready", "", nil, http.StatusOK, &ready)
	if ready.Status != "ready" || ready.Checks["store"] != "ok" || ready.Checks["sandbox_backend"] != "ok" {
		t.Fatalf("GET /ready: %+v", ready)
	}

	root := filepath.Join(e.cfg.DataDir, "sandboxes", "process")
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(root+".away", root) })
	var body []byte
	e.eventually("/health to answer 503", func() bool {
		var status int
		status, body = e.call("GET", "/health", "", nil)
		return status == http.StatusServiceUnavailable
	})
	var down apitypes.ReadinessResponse
	if err := json.Unmarshal(body, &down); err != nil {
		t.Fatalf("503 body %s: %v", body, err)
	}
	const want = "the process backend: the sandbox directory is not writable"
	if down.Status != "unavailable" || down.Checks["sandbox_backend"] != want || down.Checks["store"] != "ok" || down.Message != want {
		t.Fatalf("GET /health with the backend down: %s", body)
	}
	if strings.Contains(string(body), e.cfg.DataDir) {
		t.Fatalf("the answer names a host path: %s", body)
	}
	e.must("GET", "/ready", "", nil, http.StatusServiceUnavailable, nil)
	e.must("GET", "/alive", "", nil, http.StatusOK, nil)

	if err := os.Rename(root+".away", root); err != nil {
		t.Fatal(err)
	}
	e.eventually("/ready to answer 200 again", func() bool {
		status, _ := e.call("GET", "/ready", "", nil)
		return status == http.StatusOK
	})
}

// TestReadinessStoreDown: a store that no longer answers makes the probes answer 503; the
// answer says which check failed without the store's own error text, which goes to the log,
// once.
func TestReadinessStoreDown(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var logs syncLog
	api, err := httpapi.New(httpapi.Deps{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Checks: []httpapi.Check{
			{Name: "store", Run: st.Ping},
			{Name: "sandbox_backend", Run: func(context.Context) error { return nil }},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	for range 3 {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "/ready", nil))
		var res apitypes.ReadinessResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("body %s: %v", rec.Body, err)
		}
		if rec.Code != http.StatusServiceUnavailable || res.Checks["store"] != "store failed; the server log has the cause" ||
			res.Checks["sandbox_backend"] != "ok" {
			t.Fatalf("GET /ready with a closed store: %d %s", rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "closed") {
			t.Fatalf("the answer carries the store's error text: %s", rec.Body)
		}
	}
	if n := strings.Count(logs.String(), "readiness check failed"); n != 1 {
		t.Fatalf("the failure was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "closed") {
		t.Fatalf("the log lacks the cause:\n%s", logs.String())
	}
}
