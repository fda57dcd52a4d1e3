package runtime

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// heldGit puts first on PATH a git that, for its first `init`, waits until release is called
// before it runs the real git, so that a test can act while a repository is being made.
// Release only once that git runs, or the call waits for it.
func heldGit(t *testing.T) (release func()) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor a; do [ \"$a\" = init ] && [ -p " + fifo + " ] && { read _ < " + fifo + "; rm -f " + fifo + "; break; }; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var once sync.Once
	release = func() {
		once.Do(func() {
			// Opening the FIFO for writing lets the held git's read return.
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			f.WriteString("go\n")
			f.Close()
		})
	}
	return release
}

// newClientServer starts a runtime on a workspace of its own and returns it with a client
// of it. The cleanup closes the runtime before its HTTP server: Close kills a git still
// held, which lets the requests waiting for it go.
func newClientServer(t *testing.T) (*Server, *runtimeclient.Client, string) {
	t.Helper()
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{SandboxID: "sb1", Workspace: ws, SessionKey: testKey, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); hs.Close() })
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, ws
}

// TestWorkDirGitAfterAnswer: with Prefer: respond-async, the runtime answers once the
// directory is made, with git init still to run; a command sent meanwhile runs only once the
// repository is whole, while the skill files and the identity are answered at once.
func TestWorkDirGitAfterAnswer(t *testing.T) {
	release := heldGit(t)
	s, c, ws := newClientServer(t)
	ctx := t.Context()

	author := runtimeclient.WorkDirGit{Name: "Ada Lovelace", Email: "ada@example.com"}
	res, err := c.WorkDir(ctx, runtimeclient.WorkDirRequest{Dir: "project", Git: &author, GitAfterAnswer: true})
	if err != nil || res.Git != runtimeclient.WorkDirGitStarted {
		t.Fatalf("work-dir: %+v %v", res, err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "project")); err != nil || !fi.IsDir() {
		t.Fatalf("the directory is not made before the answer: %v", err)
	}

	// git init is held: the skill files and the identity do not wait for it.
	if _, err := c.SkillFiles(ctx, skillFilesRequest()); err != nil {
		t.Fatalf("skill files while the repository is made: %v", err)
	}
	if _, err := c.Identity(ctx); err != nil {
		t.Fatalf("identity while the repository is made: %v", err)
	}

	type ran struct {
		res runtimeclient.CommandResult
		err error
	}
	done := make(chan ran, 1)
	go func() {
		r, err := c.Run(ctx, runtimeclient.CommandRequest{Cwd: "project", Command: "git rev-parse --is-inside-work-tree && git config user.name"})
		done <- ran{r, err}
	}()
	// Release git init once the command waits for it; a command that ran at once fails.
	for s.inits.waiting() == 0 {
		select {
		case got := <-done:
			t.Fatalf("a command ran while the repository was made: %+v %v", got.res, got.err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	release()
	got := <-done
	if got.err != nil || got.res.ExitCode != 0 || got.res.Output != "true\nAda Lovelace\n" {
		t.Fatalf("a command sent while the repository was made: %+v %v", got.res, got.err)
	}

	// Without the preference (a control plane from before it), the answer follows git init.
	res, err = c.WorkDir(ctx, runtimeclient.WorkDirRequest{Dir: "other", Git: &author})
	if err != nil || res.Git != runtimeclient.WorkDirGitCreated {
		t.Fatalf("work-dir without the preference: %+v %v", res, err)
	}
}

// TestWorkDirGitAfterAnswerHeader: the preference is honoured among others, and said to be.
func TestWorkDirGitAfterAnswerHeader(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	hs, ws := newTestServer(t, nil)
	body := `{"dir":"p","git":{"name":"a","email":"b"}}`
	req, err := http.NewRequest(http.MethodPost, hs.URL+"/api/work-dir", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(runtimeclient.HeaderSessionKey, testKey)
	req.Header.Set("Prefer", "wait=10, Respond-Async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Preference-Applied") != runtimeclient.PreferAsync {
		t.Fatalf("%d, Preference-Applied %q", resp.StatusCode, resp.Header.Get("Preference-Applied"))
	}
	// Any request that touches the workspace waits for the repository.
	code, out := do(t, http.MethodPost, hs.URL+"/api/command", http.Header{runtimeclient.HeaderSessionKey: {testKey}}, `{"command":"test -f p/.git/HEAD && echo whole"}`)
	if code != http.StatusOK || !strings.Contains(out, `whole`) {
		t.Fatalf("%d %s (workspace %s)", code, out, ws)
	}
}

// TestWorkDirOneRepositoryAtOnce: two requests for the same directory at once make one
// repository, with the author once; the second waits for the first and finds its .git.
func TestWorkDirOneRepositoryAtOnce(t *testing.T) {
	release := heldGit(t)
	s, c, ws := newClientServer(t)
	ctx := t.Context()
	author := runtimeclient.WorkDirGit{Name: "Ada Lovelace", Email: "ada@example.com"}
	type made struct {
		res runtimeclient.WorkDirResult
		err error
	}
	done := make(chan made, 2)
	for range 2 {
		go func() {
			res, err := c.WorkDir(ctx, runtimeclient.WorkDirRequest{Dir: "project", Git: &author})
			done <- made{res, err}
		}()
	}
	// One git init is held; release it once the other request waits for it.
	deadline := time.Now().Add(30 * time.Second)
	for s.inits.waiting() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second request did not wait for the repository the first makes")
		}
		time.Sleep(time.Millisecond)
	}
	release()
	got := map[string]int{}
	for range 2 {
		m := <-done
		if m.err != nil {
			t.Fatal(m.err)
		}
		got[m.res.Git]++
	}
	if got[runtimeclient.WorkDirGitCreated] != 1 || got[runtimeclient.WorkDirGitExists] != 1 {
		t.Fatalf("results: %v, want one created and one exists", got)
	}
	config, err := os.ReadFile(filepath.Join(ws, "project", ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(config), "[user]"); n != 1 {
		t.Fatalf("the author is in the configuration %d times:\n%s", n, config)
	}
}

// TestWorkDirGitAfterAnswerClose: Close kills a git init still running, so that nothing waits
// for it any longer, and refuses to start another.
func TestWorkDirGitAfterAnswerClose(t *testing.T) {
	heldGit(t) // never released
	s, c, _ := newClientServer(t)
	author := runtimeclient.WorkDirGit{Name: "a", Email: "b"}
	res, err := c.WorkDir(t.Context(), runtimeclient.WorkDirRequest{Dir: "project", Git: &author, GitAfterAnswer: true})
	if err != nil || res.Git != runtimeclient.WorkDirGitStarted {
		t.Fatalf("work-dir: %+v %v", res, err)
	}
	s.Close()
	if err := s.inits.wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = c.WorkDir(t.Context(), runtimeclient.WorkDirRequest{Dir: "other", Git: &author, GitAfterAnswer: true})
	var st *runtimeclient.StatusError
	if !errors.As(err, &st) || st.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("work-dir after Close: %v", err)
	}
}
