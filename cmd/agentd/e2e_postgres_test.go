package main_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestServeOnPostgres: a server on PostgreSQL refuses to start without the shared keyring,
// and with one keeps what it is given there: a restarted server (another data directory, as
// another replica would have) finds the user's sealed settings and the sandbox; a server
// with another keyring is refused, saying why; rotate-key reseals under a new key that the
// next server reads from the same file.
func TestServeOnPostgres(t *testing.T) {
	t.Parallel()
	const key = "postgres-admin-key-0123456789"
	db := pgtest.Database(t)
	env := []string{"AGENTD_ADMIN_KEY=" + key, "AGENTD_DATABASE=" + db}
	keyring := filepath.Join(t.TempDir(), "keyring.json")

	_, stderr, code := runAgentd(t, env, "serve", "--data-dir", newDataDir(t), "--addr", "127.0.0.1:0", "--sandbox-backend", "process")
	failIfPanics(t, stderr)
	if code != 1 || !strings.Contains(stderr, "needs the keyring that every replica of the database shares") {
		t.Fatalf("serve on PostgreSQL without a keyring: exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, db) {
		t.Errorf("the database URL is in the output:\n%s", stderr)
	}

	stdout, stderr, code := runAgentd(t, nil, "keyring", "create", keyring)
	if code != 0 || !strings.Contains(stdout, "created with key") {
		t.Fatalf("keyring create: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, _, code := runAgentd(t, nil, "keyring", "create", keyring); code == 0 {
		t.Fatal("keyring create over an existing file succeeded")
	}

	s := startServer(t, newDataDir(t), env, "--keyring-file", keyring)
	admin := s.client(key)
	admin.do("POST", "/api/settings", map[string]any{"llm_model": "m", "llm_api_key": "sk-on-postgres"}, http.StatusOK, nil)
	user := admin.newUser("pg-user")
	if user == "" {
		t.Fatal("no key for the new user")
	}
	if code, _ := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr)
	}

	other := filepath.Join(t.TempDir(), "other.json")
	if _, _, code := runAgentd(t, nil, "keyring", "create", other); code != 0 {
		t.Fatal("keyring create failed")
	}
	_, stderr, code = runAgentd(t, env, "serve", "--data-dir", newDataDir(t), "--addr", "127.0.0.1:0", "--sandbox-backend", "process", "--keyring-file", other)
	failIfPanics(t, stderr)
	if code != 1 || !strings.Contains(stderr, "not the keyring they were sealed with") {
		t.Fatalf("serve with another keyring: exit %d, stderr:\n%s", code, stderr)
	}

	stdout, stderr, code = runAgentd(t, env, "rotate-key", "--keyring-file", keyring)
	if code != 0 || !strings.Contains(stdout, "sealed under key") {
		t.Fatalf("rotate-key on PostgreSQL: exit %d\n%s%s", code, stdout, stderr)
	}

	s = startServer(t, newDataDir(t), env, "--keyring-file", keyring)
	admin = s.client(key)
	var view struct {
		LLMModel     string `json:"llm_model"`
		LLMAPIKeySet bool   `json:"llm_api_key_set"`
	}
	admin.do("GET", "/api/settings", nil, http.StatusOK, &view)
	if view.LLMModel != "m" || !view.LLMAPIKeySet {
		t.Fatalf("settings on a second server after rotation: %+v", view)
	}
	if me := s.client(user).me(); me.ID == "" {
		t.Fatal("the user's key does not work on the second server")
	}
	sb := admin.startSandbox()
	admin.waitSandbox(sb.ID, "RUNNING")
	if strings.Contains(s.stderr.String(), "level=ERROR") {
		t.Errorf("errors in the log:\n%s", s.stderr)
	}
}
