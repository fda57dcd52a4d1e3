package runtime

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// wsServer is a runtime serving a fresh workspace, for the workspace routes.
type wsServer struct {
	t   *testing.T
	url string
	ws  string
}

func newWorkspaceServer(t *testing.T, maxUpload int64) *wsServer {
	t.Helper()
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{
		SandboxID: "sb1", Workspace: ws, SessionKey: testKey, MaxUploadBytes: maxUpload,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return &wsServer{t: t, url: hs.URL, ws: ws}
}

// in returns the view of the server for t, a subtest of the test that made it: the same
// runtime and workspace, with failures reported to t.
func (w *wsServer) in(t *testing.T) *wsServer {
	v := *w
	v.t = t
	return &v
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// detail is the {"detail": "..."} of an error answer.
func (a answer) detail() string {
	var d struct {
		Detail any `json:"detail"`
	}
	json.Unmarshal(a.body, &d)
	if s, ok := d.Detail.(string); ok {
		return s
	}
	b, _ := json.Marshal(d.Detail)
	return string(b)
}

func (w *wsServer) do(method, path string, q url.Values, header http.Header, body io.Reader) answer {
	w.t.Helper()
	req, err := http.NewRequest(method, w.url+path+"?"+q.Encode(), body)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set(runtimeclient.HeaderSessionKey, testKey)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (w *wsServer) get(path string, q url.Values) answer {
	w.t.Helper()
	return w.do(http.MethodGet, path, q, nil, nil)
}

// getJSON GETs path and decodes a 200 answer into out.
func (w *wsServer) getJSON(path string, q url.Values, out any) {
	w.t.Helper()
	a := w.get(path, q)
	if a.status != http.StatusOK {
		w.t.Fatalf("GET %s?%s: %d %s", path, q.Encode(), a.status, a.body)
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		w.t.Fatalf("GET %s?%s: decode %s: %v", path, q.Encode(), a.body, err)
	}
}

// upload posts content as the multipart field field.
func (w *wsServer) upload(path, field string, content []byte) answer {
	w.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile(field, "upload.bin")
	if err != nil {
		w.t.Fatal(err)
	}
	fw.Write(content)
	mw.Close()
	return w.do(http.MethodPost, "/api/file/upload", url.Values{"path": {path}},
		http.Header{"Content-Type": {mw.FormDataContentType()}}, &body)
}

// writeFiles writes files (relative name → content) under dir, making parents.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
}

// gitIn runs git in dir as a test's user, with a fixed identity and default branch.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	full := append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}
