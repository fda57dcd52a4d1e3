package httpapi_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// wsConv is a conversation whose workspace a test reads and writes.
type wsConv struct {
	*agentConv
	ws string // the workspace's path, as the sandbox sees it
}

// in returns the view of the conversation for t, a subtest: its failures are t's.
func (c *wsConv) in(t *testing.T) *wsConv {
	v := *c
	v.agentConv = c.agentConv.in(t)
	return &v
}

// startWorkspaceConv starts a READY conversation and holds a repository in its workspace:
// one commit, then a file changed, one deleted, one renamed and one new.
func (e *env) startWorkspaceConv(key string) *wsConv {
	e.t.Helper()
	c := &wsConv{agentConv: e.startAgent(key, map[string]any{"initial_message": message("hello", false)})}
	rt, err := e.app.Sandboxes.Client(context.Background(), e.userIDOf(key), c.sandboxID)
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := rt.Identity(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	// The repository is the conversation's working directory, where OpenHands' clients look.
	c.ws = path.Join(id.Workspace, conversation.ProjectDir)
	const git = "git -c user.name=T -c user.email=t@example.com -c init.defaultBranch=main -c commit.gpgsign=false"
	res, err := rt.Run(context.Background(), runtimeclient.CommandRequest{Command: strings.Join([]string{
		git + " init -q",
		"printf 'one\\n' > mod.txt", "printf 'bye\\n' > del.txt", "printf 'moved\\n' > old.txt",
		git + " add -A", git + " commit -q -m first",
		"printf 'two\\n' > mod.txt", "rm del.txt", git + " mv old.txt new.txt", "printf 'new\\n' > untracked.txt",
	}, " && "), Cwd: c.ws})
	if err != nil || res.ExitCode != 0 {
		e.t.Fatalf("prepare the repository: %v %+v", err, res)
	}
	return c
}

// sandboxPath is a path of the conversation's agent server API.
func (c *wsConv) sandboxPath(suffix string, q url.Values) string {
	p := "/agent-server/" + c.sandboxID + "/api" + suffix
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// upload posts a multipart upload with key.
func (e *env) upload(p, key string, content []byte) (int, []byte) {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "x.bin")
	fw.Write(content)
	mw.Close()
	req, err := http.NewRequest("POST", e.srv.URL+p, &body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Session-API-Key", key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func changeList(t *testing.T, body []byte) []string {
	t.Helper()
	var changes []runtimeclient.GitChange
	if err := json.Unmarshal(body, &changes); err != nil {
		t.Fatalf("decode changes %s: %v", body, err)
	}
	out := []string{}
	for _, c := range changes {
		out = append(out, c.Status+" "+c.Path)
	}
	return out
}

var wantChanges = []string{"DELETED del.txt", "UPDATED mod.txt", "ADDED new.txt", "DELETED old.txt", "ADDED untracked.txt"}

// TestWorkspaceAgentServer: the workspace through the agent server's paths, with the
// sandbox's session key and with the owner's API key alike.
func TestWorkspaceAgentServer(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxUploadMB = 1 })
	_, alice := e.newUser("alice")
	c := e.startWorkspaceConv(alice)

	for _, key := range []struct{ name, key string }{{"session key", c.sessionKey}, {"owner's key", alice}} {
		t.Run(key.name, func(t *testing.T) {
			e := e.in(t)
			c := c.in(t)
			k := key.key
			content := []byte("uploaded with the " + key.name)
			target := "up/" + strings.ReplaceAll(key.name, " ", "-") + "/file.txt"
			if st, b := e.upload(c.sandboxPath("/file/upload", url.Values{"path": {path.Join(c.ws, target)}}), k, content); st != http.StatusOK || string(b) != "{\"success\":true}\n" {
				t.Fatalf("upload: %d %s", st, b)
			}
			got := e.must("GET", c.sandboxPath("/file/download", url.Values{"path": {path.Join(c.ws, target)}}), k, nil, http.StatusOK, nil)
			if !bytes.Equal(got, content) {
				t.Errorf("download gave %q, want %q", got, content)
			}

			var page runtimeclient.FilePage
			e.must("GET", c.sandboxPath("/file/list", url.Values{"path": {c.ws}}), k, nil, http.StatusOK, &page)
			var names []string
			for _, it := range page.Items {
				names = append(names, it.Name+":"+it.Type)
			}
			for _, want := range []string{".git:directory", "mod.txt:file", "new.txt:file", "up:directory"} {
				if !slices.Contains(names, want) {
					t.Errorf("listing %v lacks %s", names, want)
				}
			}

			changes := changeList(t, e.must("GET", c.sandboxPath("/git/changes", url.Values{"path": {c.ws}}), k, nil, http.StatusOK, nil))
			for _, want := range append(slices.Clone(wantChanges), "ADDED "+target) {
				if !slices.Contains(changes, want) {
					t.Errorf("changes %v lack %s", changes, want)
				}
			}
			var diff struct {
				Modified *string `json:"modified"`
				Original *string `json:"original"`
			}
			e.must("GET", c.sandboxPath("/git/diff", url.Values{"path": {path.Join(c.ws, "mod.txt")}}), k, nil, http.StatusOK, &diff)
			if diff.Modified == nil || *diff.Modified != "two\n" || diff.Original == nil || *diff.Original != "one\n" {
				t.Errorf("diff %+v", diff)
			}
		})
	}

	t.Run("git routes with the path in the URL", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		got := changeList(t, e.must("GET", c.sandboxPath("/git/changes/"+url.PathEscape(c.ws), nil), alice, nil, http.StatusOK, nil))
		if !slices.Contains(got, "UPDATED mod.txt") {
			t.Errorf("changes by path %v", got)
		}
		var diff runtimeclient.GitDiff
		e.must("GET", c.sandboxPath("/git/diff/"+url.PathEscape(path.Join(c.ws, "del.txt")), nil), alice, nil, http.StatusOK, &diff)
		if diff.Modified == nil || *diff.Modified != "" || diff.Original == nil || *diff.Original != "bye\n" {
			t.Errorf("diff of a deleted file %+v", diff)
		}
	})

	t.Run("archive", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		status, body := e.call("GET", c.sandboxPath("/file/archive", nil), c.sessionKey, nil)
		if status != http.StatusOK {
			t.Fatalf("archive: %d %s", status, body)
		}
		gz, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		members := map[string]string{}
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			members[h.Name] = string(b)
		}
		top := path.Base(path.Dir(c.ws)) + "/" + path.Base(c.ws) // the workspace's, then the project's
		if members[top+"/mod.txt"] != "two\n" || members[top+"/up/session-key/file.txt"] == "" {
			t.Errorf("archive members %v", members)
		}
	})

	t.Run("a static file of the conversation", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		e.upload(c.sandboxPath("/file/upload", url.Values{"path": {path.Join(c.ws, "site/index.html")}}), alice, []byte("<p>hi</p>"))
		for _, p := range []string{"/workspace/site/index.html", "/workspace/site"} {
			req, _ := http.NewRequest("GET", e.srv.URL+c.path(p), nil)
			req.Header.Set("X-Session-API-Key", c.sessionKey)
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "<p>hi</p>" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
				resp.Header.Get("Content-Security-Policy") != "sandbox" {
				t.Errorf("GET %s: %d %q %v", p, resp.StatusCode, b, resp.Header)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		for _, tc := range []struct {
			name, path string
			status     int
			detail     string
		}{
			{"a path out of the workspace", c.sandboxPath("/file/download", url.Values{"path": {"../../etc/passwd"}}), http.StatusBadRequest, "is outside the workspace"},
			{"an absolute path elsewhere", c.sandboxPath("/file/list", url.Values{"path": {"/etc"}}), http.StatusBadRequest, "is outside the workspace"},
			{"a missing file", c.sandboxPath("/file/download", url.Values{"path": {"nope.txt"}}), http.StatusNotFound, "No such file or directory: " + path.Join(path.Dir(c.ws), "nope.txt")},
			{"a directory for a file", c.sandboxPath("/file/download", url.Values{"path": {path.Join(c.ws, "up")}}), http.StatusBadRequest, "Not a file: " + path.Join(c.ws, "up")},
			{"a static file out of the workspace", c.path("/workspace/%2Fetc%2Fpasswd"), http.StatusBadRequest, "is outside the workspace"},
			{"a static file up the tree", c.path("/workspace/%2E%2E%2Fx"), http.StatusNotFound, "Not Found"},
		} {
			status, body := e.call("GET", tc.path, alice, nil)
			if status != tc.status || !strings.Contains(string(body), tc.detail) {
				t.Errorf("%s: %d %s, want %d %q", tc.name, status, body, tc.status, tc.detail)
			}
		}
		if st, b := e.upload(c.sandboxPath("/file/upload", url.Values{"path": {"big.bin"}}), alice, make([]byte, 1<<20+1)); st != http.StatusRequestEntityTooLarge {
			t.Errorf("an upload over max_upload_mb: %d %s", st, b)
		}
		if st, b := e.upload(c.sandboxPath("/file/upload", url.Values{"path": {"../escape.txt"}}), alice, []byte("x")); st != http.StatusBadRequest {
			t.Errorf("an upload out of the workspace: %d %s", st, b)
		}
	})
}

// TestWorkspaceAccess: only the owner's key and the sandbox's own session key open a
// workspace.
func TestWorkspaceAccess(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	c := e.startWorkspaceConv(alice)
	other := e.startAgent(bob, map[string]any{"initial_message": message("hi", false)})

	routes := []string{
		c.sandboxPath("/file/list", nil),
		c.sandboxPath("/file/download", url.Values{"path": {"mod.txt"}}),
		c.sandboxPath("/file/archive", nil),
		c.sandboxPath("/git/changes", nil),
		c.sandboxPath("/git/diff", url.Values{"path": {"mod.txt"}}),
		c.path("/workspace/mod.txt"),
	}
	for _, p := range routes {
		for _, tc := range []struct {
			name, key string
			status    int
		}{
			{"no key", "", http.StatusUnauthorized},
			{"another user's key", bob, http.StatusNotFound},
			{"another sandbox's session key", other.sessionKey, http.StatusUnauthorized},
			{"a wrong key", "not-a-key", http.StatusUnauthorized},
		} {
			if status, body := e.call("GET", p, tc.key, nil); status != tc.status {
				t.Errorf("GET %s with %s: %d %s, want %d", p, tc.name, status, body, tc.status)
			}
		}
	}
	if st, _ := e.upload(c.sandboxPath("/file/upload", url.Values{"path": {"bob.txt"}}), bob, []byte("x")); st != http.StatusNotFound {
		t.Errorf("upload with another user's key: %d", st)
	}
	if st, _ := e.upload(c.sandboxPath("/file/upload", url.Values{"path": {"bob.txt"}}), other.sessionKey, []byte("x")); st != http.StatusUnauthorized {
		t.Errorf("upload with another sandbox's session key: %d", st)
	}
	if status, _ := e.call("GET", c.sandboxPath("/file/download", url.Values{"path": {"bob.txt"}}), alice, nil); status != http.StatusNotFound {
		t.Errorf("a refused upload wrote its file: download answered %d", status)
	}

	t.Run("a paused sandbox", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/pause", alice, nil, http.StatusOK, nil)
		status, body := e.call("GET", c.sandboxPath("/git/changes", nil), alice, nil)
		if status != http.StatusConflict {
			t.Errorf("changes of a paused sandbox: %d %s, want 409", status, body)
		}
		e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/resume", alice, nil, http.StatusOK, nil)
	})
}

// TestWorkspaceAppConversation: the current generation's routes per conversation.
func TestWorkspaceAppConversation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	c := e.startWorkspaceConv(alice)
	base := "/api/v1/app-conversations/" + c.id

	got := changeList(t, e.must("GET", base+"/git/changes?path="+url.QueryEscape(c.ws), alice, nil, http.StatusOK, nil))
	if !slices.Equal(got, wantChanges) {
		t.Errorf("changes %v, want %v", got, wantChanges)
	}
	var diff runtimeclient.GitDiff
	e.must("GET", base+"/git/diff?path=new.txt", alice, nil, http.StatusOK, &diff)
	if diff.Modified == nil || *diff.Modified != "moved\n" || diff.Original == nil || *diff.Original != "" {
		t.Errorf("diff of a renamed file's new name %+v", diff)
	}

	var files []string
	e.must("GET", base+"/files", alice, nil, http.StatusOK, &files)
	if !slices.Equal(files, []string{"mod.txt", "new.txt", "untracked.txt"}) {
		t.Errorf("files %v (without .git)", files)
	}
	e.must("GET", base+"/files?path=nowhere", alice, nil, http.StatusOK, &files)
	if len(files) != 0 {
		t.Errorf("files of a missing directory %v, want none", files)
	}

	var text string
	e.must("GET", base+"/file?file_path="+url.QueryEscape(path.Join(c.ws, "mod.txt")), alice, nil, http.StatusOK, &text)
	if text != "two\n" {
		t.Errorf("file text %q", text)
	}
	e.must("GET", base+"/file", alice, nil, http.StatusOK, &text)
	if text != "" {
		t.Errorf("the missing PLAN.md read %q, want \"\"", text)
	}
	if status, body := e.call("GET", base+"/file?file_path=/etc/passwd", alice, nil); status != http.StatusBadRequest ||
		!strings.Contains(string(body), "is outside the workspace") {
		t.Errorf("file out of the workspace: %d %s", status, body)
	}

	for _, p := range []string{base + "/git/changes", base + "/git/diff?path=mod.txt", base + "/files", base + "/file?file_path=mod.txt"} {
		if status, body := e.call("GET", p, bob, nil); status != http.StatusNotFound {
			t.Errorf("GET %s as another user: %d %s, want 404", p, status, body)
		}
		if status, _ := e.call("GET", p, c.sessionKey, nil); status != http.StatusUnauthorized {
			t.Errorf("GET %s with the session key: %d, want 401 (the app routes take API keys)", p, status)
		}
	}
}

// TestWorkspaceLongPaths: a path with a name longer than a file name may be, or longer than
// a path may be, is a 400 that says which bound it passes (never a 500, nor the path
// repeated), on every workspace and git route; a name of the longest length works.
func TestWorkspaceLongPaths(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startWorkspaceConv(alice)
	base := "/api/v1/app-conversations/" + c.id
	longest := strings.Repeat("n", 255)
	if status, body := e.upload(c.sandboxPath("/file/upload/"+longest, nil), alice, []byte("x")); status != http.StatusOK {
		t.Fatalf("upload of a 255-byte name: %d %s", status, body)
	}
	for _, tc := range []struct{ name, path, detail string }{
		{"a long name", strings.Repeat("a", 256), "A name in the path is 256 bytes long; a file name has at most 255"},
		{"a very long name", strings.Repeat("a", 70000), "a path has at most 4095"},
		{"a long path", strings.Repeat("dir/", 1100) + "f", "a path has at most 4095"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			c := c.in(t)
			q := url.Values{"path": {tc.path}}
			escaped := url.PathEscape(tc.path)
			for _, p := range []string{
				c.sandboxPath("/file/download/"+escaped, nil),
				c.sandboxPath("/file/download", q),
				c.sandboxPath("/file/list", q),
				c.sandboxPath("/file/archive", q),
				c.sandboxPath("/git/changes/"+escaped, nil),
				c.sandboxPath("/git/diff/"+escaped, nil),
				c.sandboxPath("/git/changes", q),
				c.sandboxPath("/git/diff", q),
				c.sandboxPath("/conversations/"+c.id+"/workspace/"+escaped, nil),
				base + "/git/changes?" + q.Encode(),
				base + "/git/diff?" + q.Encode(),
				base + "/files?" + q.Encode(),
				base + "/file?" + url.Values{"file_path": {tc.path}}.Encode(),
			} {
				status, body := e.call("GET", p, alice, nil)
				if status != http.StatusBadRequest || !strings.Contains(string(body), tc.detail) || strings.Contains(string(body), tc.path) {
					t.Errorf("GET %.100s: %d %.200s, want 400 saying %q", p, status, body, tc.detail)
				}
			}
			for _, p := range []string{c.sandboxPath("/file/upload/"+escaped, nil), c.sandboxPath("/file/upload", q)} {
				status, body := e.upload(p, alice, []byte("x"))
				if status != http.StatusBadRequest || !strings.Contains(string(body), tc.detail) {
					t.Errorf("upload %.100s: %d %.200s, want 400 saying %q", p, status, body, tc.detail)
				}
			}
		})
	}
}

// TestConversationWorkDir: a conversation's start makes its directory a git repository whose
// commits are the user's, and leaves one that exists as it is; a file where the directory
// must be ends the start in ERROR with a detail that says so.
func TestConversationWorkDir(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.must("POST", "/api/v1/settings", alice, map[string]any{"git_user_name": `Alice "A." Liddell`, "git_user_email": "alice@example.com"}, http.StatusOK, nil)
	sandboxID := e.runningSandbox(alice)
	var task struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": sandboxID}, http.StatusOK, &task)
	e.waitTaskReady(alice, task.ID)
	dir := e.projectDir(sandboxID)
	// Read through the runtime, as the agent does: git init may still run after READY, and
	// what goes through the runtime waits for it.
	for key, want := range map[string]string{"user.name": `Alice "A." Liddell`, "user.email": "alice@example.com"} {
		if out := e.run(alice, sandboxID, "git -C "+conversation.ProjectDir+" config --get "+key); strings.TrimSpace(out) != want {
			t.Fatalf("git config %s: %q, want %q", key, out, want)
		}
	}
	// A second conversation in the sandbox keeps the repository as it is.
	before, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	e.must("POST", "/api/v1/settings", alice, map[string]any{"git_user_name": "Someone Else"}, http.StatusOK, nil)
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": sandboxID}, http.StatusOK, &task)
	e.waitTaskReady(alice, task.ID)
	if after, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(after) != string(before) {
		t.Fatalf("the repository's configuration changed:\n%s\nthen\n%s", before, after)
	}

	// A file where the directory must be.
	other := e.runningSandbox(alice)
	if err := os.WriteFile(e.projectDir(other), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": other}, http.StatusOK, &task)
	got := e.waitTask(alice, task.ID, "ERROR")
	if d := strOrNil(got.Detail); !strings.Contains(fmt.Sprint(d), "/workspace/project could not be made in the sandbox") {
		t.Fatalf("the start's detail: %v", d)
	}
}
