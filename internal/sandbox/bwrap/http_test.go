package bwrap

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

const httpAdminKey = "bwrap-test-admin-key-0123456789"

// TestHTTP drives a whole agentd serve on the bwrap backend through its HTTP API: the spec
// listing says what bwrap cannot honour, and a sandbox with limits and no network starts,
// runs a command, pauses, resumes, is adopted by a restarted server and is deleted, leaving
// nothing behind.
func TestHTTP(t *testing.T) {
	dir := sandboxtest.ShortDir(t)
	root := filepath.Join(dir, "sandboxes", "bwrap")
	newTestBackend(t, testRoot(t)) // skip early when bwrap does not work here
	cfg, err := config.Load([]string{"--data-dir", dir, "--admin-key", httpAdminKey, "--sandbox-backend", Name}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Specs = []config.SpecConfig{
		{ID: "default", InitialEnv: map[string]string{sandboxtest.EnvRuntime: "1"}, Network: sandbox.NetworkNone,
			Limits: config.LimitsConfig{MemoryMB: 512, CPUs: 1, PIDs: 512}},
		{ID: "image", Image: "ubuntu:24.04", Network: sandbox.NetworkNone},
	}

	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	defer srv.Close()
	var a *apptest.Server
	var b *Backend
	open := func() {
		b = newTestBackend(t, root)
		if a, err = apptest.Start(context.Background(), app.Options{Config: cfg, Backend: b, Version: "test"}); err != nil {
			t.Fatal(err)
		}
		h := a.Handler()
		handler.Store(&h)
	}
	closeApp := func() {
		a.Close()
		b.Close()
	}
	// Its Close is registered before the cleanup that uses it, so runs after.
	cleaner := newTestBackend(t, root)
	sandboxtest.DestroyAllAtCleanup(t, cleaner)
	open()
	t.Cleanup(func() {
		closeApp()
		if kids, _ := b.cg.Children(b.cgParent); len(kids) > 0 {
			t.Errorf("cgroups left: %q", kids)
		}
	})

	call := func(method, path string, out any) {
		t.Helper()
		code, body := adminCall(t, srv, method, path)
		if code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, code, body)
		}
		if out != nil {
			if err := json.NewDecoder(strings.NewReader(body)).Decode(out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, body)
			}
		}
	}

	var specs struct {
		Items []struct {
			ID       string   `json:"id"`
			Warnings []string `json:"warnings"`
		} `json:"items"`
	}
	call("GET", "/api/v1/sandbox-specs/search", &specs)
	for _, s := range specs.Items {
		switch s.ID {
		case "default":
			if len(s.Warnings) > 0 {
				t.Errorf("spec default has warnings %q", s.Warnings)
			}
		case "image":
			if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "cannot honour an image") {
				t.Errorf("spec image: warnings %q", s.Warnings)
			}
		}
	}

	type info struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Backend string `json:"backend"`
	}
	var sb info
	call("POST", "/api/v1/sandboxes", &sb)
	status := func() string {
		var got []*info
		call("GET", "/api/v1/sandboxes?id="+sb.ID, &got)
		if len(got) != 1 || got[0] == nil {
			t.Fatalf("sandbox %s not found: %v", sb.ID, got)
		}
		return got[0].Status
	}
	waitStatus := func(want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for st := status(); st != want; st = status() {
			if time.Now().After(deadline) {
				t.Fatalf("sandbox %s is still %s after a minute, want %s", sb.ID, st, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitStatus("RUNNING")
	if sb.Backend != Name {
		t.Fatalf("backend %q", sb.Backend)
	}
	var me struct {
		ID string `json:"id"`
	}
	call("GET", "/api/v1/users/me", &me)
	rec, err := a.Sandboxes.Get(context.Background(), me.ID, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	key, err := a.Sandboxes.SessionKey(context.Background(), me.ID, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, rec.Instance, key)
	if res := runIn(t, c, "echo ok > f && cat f"); res.Output != "ok\n" {
		t.Fatalf("command: %+v", res)
	}

	call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", nil)
	waitStatus("PAUSED")
	if got, err := b.Inspect(context.Background(), rec.Instance); err != nil || got != sandbox.StatePaused {
		t.Fatalf("inspect a paused sandbox: %s, %v", got, err)
	}
	call("POST", "/api/v1/sandboxes/"+sb.ID+"/resume", nil)
	waitStatus("RUNNING")

	closeApp()
	open()
	waitStatus("RUNNING")
	if res := runIn(t, c, "echo adopted"); res.Output != "adopted\n" {
		t.Fatalf("command after the restart: %+v", res)
	}

	call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil)
	if left := leftovers(root, rec.Instance); len(left) > 0 {
		t.Fatalf("left after delete: %q", left)
	}
}

// TestHTTPStartTimeout: a sandbox whose runtime never answers, on a backend that waits for it
// within the request, is answered 503 with the reason, and its record reads ERROR with the
// same (it was written after the start's own time had run out), with nothing of it left.
func TestHTTPStartTimeout(t *testing.T) {
	dir := sandboxtest.ShortDir(t)
	root := filepath.Join(dir, "sandboxes", "bwrap")
	newTestBackend(t, testRoot(t)) // skip early when bwrap does not work here
	cfg, err := config.Load([]string{"--data-dir", dir, "--admin-key", httpAdminKey, "--sandbox-backend", Name,
		"--sandbox-pool", "0", "--sandbox-start-timeout", "1s"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// sh -c 'sleep 30' takes the appended runtime flags as its positional arguments.
	cfg.Specs = []config.SpecConfig{{ID: "default", Command: []string{"/bin/sh", "-c", "sleep 30", "--"}, Network: sandbox.NetworkNone}}
	cleaner := newTestBackend(t, root)
	sandboxtest.DestroyAllAtCleanup(t, cleaner)
	b := newTestBackend(t, root)
	a, err := apptest.Start(context.Background(), app.Options{Config: cfg, Backend: b, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	code, body := adminCall(t, srv, "POST", "/api/v1/sandboxes")
	const why = "the sandbox did not start within 1s on the bwrap backend (the machine may be busy); the server log has the cause"
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "could not start: "+why) {
		t.Fatalf("start: %d %s; want 503 saying why", code, body)
	}
	code, body = adminCall(t, srv, "GET", "/api/v1/sandboxes/search")
	var page struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil || code != http.StatusOK || len(page.Items) != 1 || page.Items[0].Status != "ERROR" {
		t.Fatalf("search: %d %s; want the one sandbox in ERROR", code, body)
	}
	var me struct {
		ID string `json:"id"`
	}
	if code, body = adminCall(t, srv, "GET", "/api/v1/users/me"); json.Unmarshal([]byte(body), &me) != nil {
		t.Fatalf("me: %d %s", code, body)
	}
	rec, err := a.Sandboxes.Get(context.Background(), me.ID, page.Items[0].ID)
	if err != nil || rec.Detail != why {
		t.Fatalf("record %+v, %v; want the detail %q", rec, err, why)
	}
	if insts, err := b.List(context.Background()); err != nil || len(insts) != 0 {
		t.Fatalf("running after the failed start: %v, %v", insts, err)
	}
	if code, body = adminCall(t, srv, "DELETE", "/api/v1/sandboxes/"+rec.ID); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
}

// adminCall sends a request with no body as the admin and returns the status and the body.
func adminCall(t *testing.T, srv *httptest.Server, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	req.Header.Set("X-Session-API-Key", httpAdminKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
