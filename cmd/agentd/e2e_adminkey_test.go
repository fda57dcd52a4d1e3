package main_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGeneratedAdminKey: the first start prints a generated admin key once on stdout; it
// authenticates as an admin; later starts print nothing; the key is in no log and in no file
// of the data directory.
func TestGeneratedAdminKey(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)

	first := startServer(t, dir, nil)
	var key string
	waitFor(t, 30*time.Second, "the admin key on stdout", func() (bool, string) {
		key = generatedKey.FindString(first.stdout.String())
		return key != "", first.stdout.String()
	})
	if me := first.client(key).me(); !me.IsAdmin {
		t.Errorf("users/me with the printed key: %+v, want an admin", me)
	}
	// Bearer works as well as X-Session-API-Key.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", first.url+"/api/v1/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("users/me with Authorization: Bearer: status %d", resp.StatusCode)
	}
	// While the server runs, the WAL holds the newest rows.
	if hits := scanFiles(t, dir, key); len(hits) > 0 {
		t.Errorf("the admin key is in plain text in %v", hits)
	}
	// The scan can see what is stored: the key's prefix is kept in clear to tell keys apart.
	if hits := scanFiles(t, dir, key[:10]); len(hits) == 0 {
		t.Errorf("the scan finds not even the key's prefix %q in the data dir", key[:10])
	}
	if code, _ := first.stop(); code != 0 {
		t.Fatalf("first server exited %d", code)
	}
	if got := generatedKey.FindAllString(first.stdout.String(), -1); len(got) != 1 || got[0] != key {
		t.Errorf("first start printed keys %q, want %q once", got, key)
	}

	second := startServer(t, dir, nil)
	if me := second.client(key).me(); !me.IsAdmin {
		t.Errorf("users/me after a restart: %+v, want an admin", me)
	}
	if hits := scanFiles(t, dir, key); len(hits) > 0 {
		t.Errorf("the admin key is in plain text in %v", hits)
	}
	if code, _ := second.stop(); code != 0 {
		t.Fatalf("second server exited %d", code)
	}
	if out := second.stdout.String(); strings.Contains(out, "agd_") || strings.Contains(out, key) {
		t.Errorf("second start printed a key:\n%s", out)
	}
	for name, log := range map[string]string{"first": first.stderr.String(), "second": second.stderr.String()} {
		if strings.Contains(log, key) {
			t.Errorf("the %s server's log holds the admin key", name)
		}
		if !strings.Contains(log, "agentd serving") {
			t.Errorf("the %s server's log is not the log (no \"agentd serving\"):\n%s", name, log)
		}
	}
	if hits := scanFiles(t, dir, key); len(hits) > 0 {
		t.Errorf("the admin key is in plain text in %v", hits)
	}
}

// TestConfiguredAdminKey: a key set in the environment (or by flag) at the first start is the
// admin's key and is not printed; with both variables set, AGENTD_ADMIN_KEY wins.
func TestConfiguredAdminKey(t *testing.T) {
	t.Parallel()
	const key = "configured-admin-key-4711"
	tests := []struct {
		name     string
		env      []string
		args     []string
		rejected string // another key that must not authenticate
	}{
		{name: "AGENTD_ADMIN_KEY", env: []string{"AGENTD_ADMIN_KEY=" + key}},
		{name: "SESSION_API_KEY", env: []string{"SESSION_API_KEY=" + key}},
		{name: "flag", args: []string{"--admin-key", key}},
		{name: "canonical name wins", env: []string{"SESSION_API_KEY=the-alias-key", "AGENTD_ADMIN_KEY=" + key}, rejected: "the-alias-key"},
		{name: "flag wins", env: []string{"AGENTD_ADMIN_KEY=the-env-key"}, args: []string{"--admin-key", key}, rejected: "the-env-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			s := startServer(t, dir, tt.env, tt.args...)
			if me := s.client(key).me(); !me.IsAdmin || me.Name != "admin" {
				t.Errorf("users/me with the configured key: %+v, want the admin", me)
			}
			for _, bad := range []string{"", "wrong-key", key + "x", tt.rejected} {
				status, body := s.client(bad).call("GET", "/api/v1/users/me", nil)
				if status != http.StatusUnauthorized || canonical(t, body) != `{"detail":"Unauthorized"}` {
					t.Errorf("users/me with key %q: %d %s, want 401 Unauthorized", bad, status, body)
				}
			}
			if hits := scanFiles(t, dir, key); len(hits) > 0 {
				t.Errorf("the admin key is in plain text in %v", hits)
			}
			if code, _ := s.stop(); code != 0 {
				t.Fatalf("server exited %d", code)
			}
			if out := s.stdout.String(); out != "" {
				t.Errorf("stdout is not empty:\n%s", out)
			}
			if strings.Contains(s.stderr.String(), key) {
				t.Error("the log holds the admin key")
			}
		})
	}
}
