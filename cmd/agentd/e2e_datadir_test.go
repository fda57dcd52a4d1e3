package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// TestDataDirInUse: a second server on a data directory that a server uses exits non-zero
// and says why, and leaves the first one working.
func TestDataDirInUse(t *testing.T) {
	t.Parallel()
	const key = "in-use-admin-key-0123456789"
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + key}
	s := startServer(t, dir, env)
	sb := s.client(key).startSandbox()

	stdout, stderr, code := runAgentd(t, env, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--sandbox-backend", "process")
	if code == 0 {
		t.Errorf("second server exited 0")
	}
	if stdout != "" {
		t.Errorf("second server printed:\n%s", stdout)
	}
	// The first server and its sandbox are untouched.
	if me := s.client(key).me(); !me.IsAdmin {
		t.Errorf("users/me: %+v", me)
	}
	if got := s.client(key).sandbox(sb.ID); got.Status != "RUNNING" {
		t.Errorf("sandbox after the second server's attempt: %s", got.Status)
	}
	if _, err := s.client(key).runtimeClient(sb.ID).Identity(t.Context()); err != nil {
		t.Errorf("runtime after the second server's attempt: %v", err)
	}
	failIfPanics(t, stderr)
	if code != 1 {
		t.Errorf("second server exited %d, want 1", code)
	}
	if want := "agentd: data dir " + dir + " is in use by another agentd process"; !strings.Contains(stderr, want) {
		t.Errorf("second server's stderr lacks %q:\n%s", want, stderr)
	}
}

// waitDataDirFree waits (bounded) until the data directory's lock can be taken, and returns
// how long that took.
func waitDataDirFree(t *testing.T, dir string) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, 30*time.Second, "the data dir's lock to be free", func() (bool, string) {
		unlock, err := app.LockDataDir(dir)
		if err != nil {
			return false, err.Error()
		}
		unlock()
		return true, ""
	})
	if time.Since(start) < time.Millisecond {
		return 0
	}
	return time.Since(start)
}

// TestKilledServerReleasesDataDir: once a killed server has exited, its data directory is
// free at once, so that a supervisor can start the next server right away, even when the
// server was killed while it started sandboxes.
func TestKilledServerReleasesDataDir(t *testing.T) {
	t.Parallel()
	const key = "killed-admin-key-0123456789"
	for range 10 {
		dir := newDataDir(t)
		s := startServer(t, dir, []string{"AGENTD_ADMIN_KEY=" + key})
		admin := s.client(key)
		// Keep the server forking runtimes while it is killed.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest("POST", s.url+"/api/v1/sandboxes", nil)
					req.Header.Set("X-Session-API-Key", key)
					resp, err := admin.hc.Do(req)
					if err != nil {
						return
					}
					resp.Body.Close()
				}
			})
		}
		// Kill it once it is starting sandboxes, while the requests keep coming.
		waitFor(t, 30*time.Second, "the server to start a sandbox", func() (bool, string) {
			entries, err := os.ReadDir(filepath.Join(dir, "sandboxes", "process"))
			return len(entries) > 0, fmt.Sprint("sandbox directories: ", err)
		})
		s.kill()
		unlock, err := app.LockDataDir(dir)
		close(stop)
		wg.Wait()
		if err == nil {
			unlock()
			continue
		}
		took := waitDataDirFree(t, dir)
		t.Fatalf("%v, %v after `agentd serve` was killed and reaped: a server killed while it "+
			"starts a sandbox must not leave the data dir locked", err, took)
	}
}

// keyringFile is keyring.json as written by package secret.
type keyringFile struct {
	Keys []struct {
		ID     string `json:"id"`
		Key    []byte `json:"key"`
		Active bool   `json:"active"`
	} `json:"keys"`
}

func readKeyring(t *testing.T, dir string) ([]byte, keyringFile) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, app.KeyringFile))
	if err != nil {
		t.Fatal(err)
	}
	var f keyringFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("keyring.json: %v", err)
	}
	return data, f
}

var rotatedID = regexp.MustCompile(`sealed under key (\S+)\n$`)

// TestRotateKey: rotate-key refuses to run beside a server; with the server stopped it makes
// a new key, reseals every stored secret under it and drops the old one; a restarted server
// still opens every secret.
func TestRotateKey(t *testing.T) {
	t.Parallel()
	const (
		key      = "rotate-admin-key-0123456789"
		llmKey   = "sk-rotate-secret"
		ghToken  = "ghp_rotate_token"
		provider = "github"
	)
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + key}
	s := startServer(t, dir, env)
	admin := s.client(key)
	adminID := admin.me().ID
	admin.do("POST", "/api/settings", map[string]any{"llm_model": "m", "llm_api_key": llmKey}, http.StatusOK, nil)
	// A GitHub Enterprise host on loopback that knows the token, as agentd checks it.
	ghe := providertest.NewGitHub(t)
	ghe.AddUser(ghToken, providertest.User{Login: "admin"})
	admin.do("POST", "/api/add-git-providers", map[string]any{"provider_tokens": map[string]any{
		provider: map[string]any{"token": ghToken, "host": ghe.Root()}}}, http.StatusOK, nil)
	sb := admin.startSandbox()
	admin.waitTaskReady(admin.startConversationV1("sealed request").ID)

	oldData, old := readKeyring(t, dir)
	if len(old.Keys) != 1 || !old.Keys[0].Active {
		t.Fatalf("keyring before rotation: %+v", old)
	}

	_, stderr, code := runAgentd(t, nil, "rotate-key", "--data-dir", dir)
	if code == 0 || !strings.Contains(stderr, "in use") || !strings.Contains(stderr, "stop agentd serve") {
		t.Errorf("rotate-key beside a running server: exit %d, stderr:\n%s", code, stderr)
	}
	if data, _ := readKeyring(t, dir); !bytes.Equal(data, oldData) {
		t.Errorf("a refused rotate-key changed the keyring")
	}

	if code, _ := s.stop(); code != 0 {
		t.Fatalf("server exited %d", code)
	}
	stdout, stderr, code := runAgentd(t, nil, "rotate-key", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("rotate-key: exit %d, stderr:\n%s", code, stderr)
	}
	m := rotatedID.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("rotate-key printed no key id:\n%s", stdout)
	}
	newID := m[1]
	_, rotated := readKeyring(t, dir)
	if len(rotated.Keys) != 1 || rotated.Keys[0].ID != newID || !rotated.Keys[0].Active ||
		newID == old.Keys[0].ID || bytes.Equal(rotated.Keys[0].Key, old.Keys[0].Key) {
		t.Fatalf("keyring after rotation to %s: %+v; before: %+v", newID, rotated, old)
	}
	checkSealedUnder(t, dir, newID, adminID, map[string]string{"llm_api_key": llmKey, "token " + provider: ghToken})

	s = startServer(t, dir, env)
	admin = s.client(key)
	var view struct {
		LLMAPIKeySet      bool               `json:"llm_api_key_set"`
		ProviderTokensSet map[string]*string `json:"provider_tokens_set"`
	}
	admin.do("GET", "/api/settings", nil, http.StatusOK, &view)
	if _, ok := view.ProviderTokensSet[provider]; !view.LLMAPIKeySet || !ok {
		t.Errorf("settings after rotation: %+v", view)
	}
	got := admin.sandbox(sb.ID)
	if got.Status != "RUNNING" || got.SessionAPIKey == nil || *got.SessionAPIKey != *sb.SessionAPIKey {
		t.Fatalf("sandbox after rotation: status %s, session key %v (was %s)", got.Status, deref(got.SessionAPIKey), *sb.SessionAPIKey)
	}
	if _, err := admin.runtimeClient(sb.ID).Identity(t.Context()); err != nil {
		t.Errorf("runtime with the session key after rotation: %v", err)
	}
	if strings.Contains(s.stderr.String(), "level=ERROR") {
		t.Errorf("errors in the log after rotation:\n%s", s.stderr)
	}
}

// checkSealedUnder opens the stopped server's store and keyring directly: every sealed value
// must name key keyID and open, and the named secrets of user userID must read back as want.
func checkSealedUnder(t *testing.T, dir, keyID, userID string, want map[string]string) {
	t.Helper()
	unlock, err := app.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx := context.WithoutCancel(t.Context())
	kr, err := secret.LoadOrCreate(filepath.Join(dir, app.KeyringFile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, app.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	// Reseal with the identity visits every sealed value and changes none.
	err = st.Reseal(ctx, func(sealed []byte) ([]byte, error) {
		n++
		if len(sealed) < 2 || len(sealed) < 2+int(sealed[1]) || string(sealed[2:2+int(sealed[1])]) != keyID {
			return nil, fmt.Errorf("a value is not sealed under key %s", keyID)
		}
		if _, err := kr.Open(sealed); err != nil {
			return nil, err
		}
		return sealed, nil
	})
	if err != nil {
		t.Fatalf("sealed values after rotation: %v", err)
	}
	// The settings secret, the provider token, the sandbox's session key, and the requests
	// of the conversation (and its sandbox's key).
	if n < 5 {
		t.Errorf("only %d sealed values in the store, want at least 5", n)
	}
	for name, w := range want {
		var got string
		var err error
		if p, ok := strings.CutPrefix(name, "token "); ok {
			_, got, _, err = gitprovider.NewService(st, kr, gitprovider.Options{}).Token(ctx, userID, p)
		} else {
			got, _, err = settings.NewService(st, kr, nil).Secret(ctx, userID, name)
		}
		if err != nil || got != w {
			t.Errorf("%s after rotation: %q, %v; want %q", name, got, err, w)
		}
	}
}
