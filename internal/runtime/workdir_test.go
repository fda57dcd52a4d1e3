package runtime

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func postWorkDir(t *testing.T, hs string, req any) (int, runtimeclient.WorkDirResult, string) {
	t.Helper()
	return postJSON[runtimeclient.WorkDirResult](t, hs+"/api/work-dir", req)
}

// TestWorkDir: the directory is made with its parents; a repository is made there once, with
// the author asked for, whose quotes and backslashes git reads back as they were sent.
func TestWorkDir(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	hs, ws := newTestServer(t, nil)
	code, res, body := postWorkDir(t, hs.URL, runtimeclient.WorkDirRequest{Dir: "a/b"})
	if code != http.StatusOK || res.Git != "" {
		t.Fatalf("a directory alone: %d %s", code, body)
	}
	if fi, err := os.Stat(filepath.Join(ws, "a/b")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("the directory: %v %v", fi, err)
	}

	author := runtimeclient.WorkDirGit{Name: `Ada "the first" \ Lovelace`, Email: "ada@example.com"}
	code, res, body = postWorkDir(t, hs.URL, runtimeclient.WorkDirRequest{Dir: "project", Git: &author})
	if code != http.StatusOK || res.Git != runtimeclient.WorkDirGitCreated {
		t.Fatalf("a repository: %d %s", code, body)
	}
	dir := filepath.Join(ws, "project")
	for key, want := range map[string]string{"user.name": author.Name, "user.email": author.Email} {
		out, err := exec.Command("git", "-C", dir, "config", "--get", key).Output()
		if err != nil || strings.TrimSuffix(string(out), "\n") != want {
			t.Fatalf("git config %s: %q %v, want %q", key, out, err, want)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "status", "--porcelain").CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("git status in the new repository: %s %v", out, err)
	}

	// Once there, it is left as it is: no second author.
	config, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
	other := runtimeclient.WorkDirGit{Name: "Other", Email: "other@example.com"}
	code, res, body = postWorkDir(t, hs.URL, runtimeclient.WorkDirRequest{Dir: "project", Git: &other})
	if code != http.StatusOK || res.Git != runtimeclient.WorkDirGitExists {
		t.Fatalf("again: %d %s", code, body)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(again) != string(config) {
		t.Fatalf("the configuration changed:\n%s\nthen\n%s", config, again)
	}
}

// TestWorkDirRefusals: a path out of the workspace, an author of two lines, a file in the way
// and a symbolic link out are refused, and nothing is made outside.
func TestWorkDirRefusals(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  any
		code int
		want string
	}{
		{map[string]any{"dir": "/etc/x"}, http.StatusUnprocessableEntity, `"loc":["body","dir"]`},
		{map[string]any{"dir": "../x"}, http.StatusUnprocessableEntity, `"loc":["body","dir"]`},
		{map[string]any{"dir": ""}, http.StatusUnprocessableEntity, `"dir"`},
		{map[string]any{"dir": "p", "git": map[string]any{"name": "a\n[core]", "email": "e"}}, http.StatusUnprocessableEntity, `"loc":["body","git","name"]`},
		{map[string]any{"dir": "p", "extra": 1}, http.StatusUnprocessableEntity, `extra`},
		{map[string]any{"dir": "file/x"}, http.StatusConflict, `file/x could not be made in the workspace`},
		{map[string]any{"dir": "out/x"}, http.StatusConflict, `out/x could not be made in the workspace`},
	} {
		code, _, body := postWorkDir(t, hs.URL, tc.req)
		if code != tc.code || !strings.Contains(body, tc.want) || strings.Contains(body, ws) {
			t.Errorf("%v: %d %s, want %d with %s", tc.req, code, body, tc.code, tc.want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("made outside the workspace: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(ws, "p")); err == nil {
		t.Fatal("a refused request made its directory")
	}
}

// TestWorkDirWithoutGit: without git in the sandbox the directory is made and the answer says
// that git is missing.
func TestWorkDirWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	hs, ws := newTestServer(t, nil)
	code, res, body := postWorkDir(t, hs.URL, runtimeclient.WorkDirRequest{Dir: "project", Git: &runtimeclient.WorkDirGit{Name: "a", Email: "b"}})
	if code != http.StatusOK || res.Git != runtimeclient.WorkDirGitMissing {
		t.Fatalf("%d %s", code, body)
	}
	if fi, err := os.Stat(filepath.Join(ws, "project")); err != nil || !fi.IsDir() {
		t.Fatalf("the directory: %v", err)
	}
}
