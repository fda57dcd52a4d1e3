package sandboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// workspaceCall sends a request to a workspace route and reads the answer whole.
func workspaceCall(t *testing.T, c *runtimeclient.Client, wr runtimeclient.WorkspaceRequest) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	resp, err := c.Workspace(ctx, wr)
	if err != nil {
		t.Fatalf("%s %s: %v", wr.Method, wr.Route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", wr.Method, wr.Route, err)
	}
	return resp.StatusCode, b
}

// testWorkspace: the runtime's workspace routes work in the backend's sandbox as its user:
// an upload lands in the workspace and reads back, a symbolic link out of the workspace is
// refused, and git, where the sandbox has it, reports the changes of a repository.
func (s *suite) testWorkspace(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "note.txt")
	fw.Write([]byte("uploaded"))
	mw.Close()
	st, b := workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodPost, Route: runtimeclient.RouteFileUpload,
		Query:  url.Values{"path": {"dir/note.txt"}},
		Header: http.Header{"Content-Type": {mw.FormDataContentType()}}, Body: &body, Size: int64(body.Len())})
	if st != http.StatusOK {
		t.Fatalf("upload: %d %s", st, b)
	}
	if res := run(t, bx.client, "cat dir/note.txt"); res.Output != "uploaded" {
		t.Fatalf("the uploaded file reads %+v in the sandbox", res)
	}
	st, b = workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: runtimeclient.RouteFileDownload,
		Query: url.Values{"path": {bx.inst.Workspace + "/dir/note.txt"}}})
	if st != http.StatusOK || string(b) != "uploaded" {
		t.Fatalf("download: %d %q", st, b)
	}

	if res := run(t, bx.client, "ln -s /etc out"); res.ExitCode != 0 {
		t.Fatalf("make a link: %+v", res)
	}
	st, b = workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: runtimeclient.RouteFileDownload,
		Query: url.Values{"path": {"out/passwd"}}})
	if st != http.StatusBadRequest || !strings.Contains(string(b), "leads out of the workspace") {
		t.Fatalf("download through a link out of the workspace: %d %s", st, b)
	}

	if st, b := workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: runtimeclient.RouteGitChanges}); st != http.StatusOK || string(b) != "[]\n" {
		t.Fatalf("git changes of a workspace without a repository: %d %s, want []", st, b)
	}
	if res := run(t, bx.client, "command -v git"); res.ExitCode != 0 {
		run(t, bx.client, "mkdir -p fake/.git")
		st, b := workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: runtimeclient.RouteGitChanges,
			Query: url.Values{"path": {"fake"}}})
		if st != http.StatusNotImplemented || !strings.Contains(string(b), "git is not installed") {
			t.Fatalf("git changes of a repository in a sandbox without git: %d %s, want 501", st, b)
		}
		t.Log("no git in this sandbox: the git routes answer 501 where there is a repository")
		return
	}
	const git = "git -c user.name=T -c user.email=t@example.com -c commit.gpgsign=false"
	if res := run(t, bx.client, "mkdir repo && cd repo && git init -q && printf 'a\\n' > a.txt && "+git+" add a.txt && "+
		git+" commit -q -m first && printf 'b\\n' > a.txt && printf 'n\\n' > new.txt"); res.ExitCode != 0 {
		t.Fatalf("make a repository: %+v", res)
	}
	st, b = workspaceCall(t, bx.client, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: runtimeclient.RouteGitChanges,
		Query: url.Values{"path": {"repo"}}})
	var changes []runtimeclient.GitChange
	if st != http.StatusOK || json.Unmarshal(b, &changes) != nil || len(changes) != 2 ||
		changes[0] != (runtimeclient.GitChange{Status: runtimeclient.GitUpdated, Path: "a.txt"}) || changes[1] != (runtimeclient.GitChange{Status: runtimeclient.GitAdded, Path: "new.txt"}) {
		t.Fatalf("git changes: %d %s", st, b)
	}
}
