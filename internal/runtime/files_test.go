package runtime

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func TestFileList(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	writeFiles(t, w.ws, map[string]string{"b.txt": "hello", "a/inner.txt": "x", "c.txt": ""})
	if err := os.Symlink("b.txt", filepath.Join(w.ws, "link")); err != nil {
		t.Fatal(err)
	}
	var page runtimeclient.FilePage
	w.getJSON("/api/file/list", nil, &page)
	var got []string
	for _, e := range page.Items {
		got = append(got, e.Name+":"+e.Type)
		if e.Path != filepath.Join(w.ws, e.Name) {
			t.Errorf("%s: path %s, want it absolute in the workspace", e.Name, e.Path)
		}
		if e.Name == "b.txt" && (e.Size != 5 || e.ModifiedAt.IsZero()) {
			t.Errorf("b.txt: %+v, want size 5 and a modification time", e)
		}
	}
	want := []string{"a:directory", "b.txt:file", "c.txt:file", "link:symlink"}
	if !slices.Equal(got, want) || page.NextPageID != nil {
		t.Fatalf("listing %v (next %v), want %v and no next page", got, page.NextPageID, want)
	}

	t.Run("pages", func(t *testing.T) {
		w := w.in(t)
		var names []string
		q := url.Values{"limit": {"3"}}
		for pages := 0; ; pages++ {
			var p runtimeclient.FilePage
			w.getJSON("/api/file/list", q, &p)
			for _, e := range p.Items {
				names = append(names, e.Name)
			}
			if p.NextPageID == nil {
				if pages != 1 {
					t.Errorf("%d pages, want 2", pages+1)
				}
				break
			}
			q.Set("page_id", *p.NextPageID)
		}
		if !slices.Equal(names, []string{"a", "b.txt", "c.txt", "link"}) {
			t.Errorf("paged names %v", names)
		}
	})

	t.Run("a subdirectory, by relative and absolute path", func(t *testing.T) {
		w := w.in(t)
		for _, p := range []string{"a", filepath.Join(w.ws, "a"), "a/../a/"} {
			var page runtimeclient.FilePage
			w.getJSON("/api/file/list", url.Values{"path": {p}}, &page)
			if len(page.Items) != 1 || page.Items[0].Path != filepath.Join(w.ws, "a", "inner.txt") {
				t.Errorf("list %s: %+v", p, page.Items)
			}
		}
	})
}

// TestWorkspaceConfinement: no route reaches outside the workspace, through "..", an absolute
// path or a symbolic link, and each says why.
func TestWorkspaceConfinement(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "outside"})
	writeFiles(t, w.ws, map[string]string{"in/ok.txt": "inside"})
	for name, target := range map[string]string{
		"out":        outside,                                   // absolute, out
		"up":         "../" + filepath.Base(outside),            // relative, out
		"in/deep":    "../../" + filepath.Base(outside),         // relative from a subdirectory
		"secretlink": filepath.Join(outside, "secret.txt"),      // a file out
		"dangling":   filepath.Join(outside, "not-there-yet"),   // a file that would be made out
		"okdir":      "in",                                      // in: allowed
		"oklink":     filepath.Join(w.ws, "in", "ok.txt"),       // absolute but in: allowed
		"loop":       "loop",                                    // itself
		"in/backup":  filepath.Join("..", "in", "..", "..", ""), // the workspace's parent
	} {
		if err := os.Symlink(target, filepath.Join(w.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	const outsideWS = "is outside the workspace"
	const throughLink = "leads out of the workspace through the symbolic link"
	for _, tc := range []struct {
		route, path, want string
	}{
		{"/api/file/list", "..", outsideWS},
		{"/api/file/list", "../" + filepath.Base(outside), outsideWS},
		{"/api/file/list", outside, outsideWS},
		{"/api/file/list", "/etc", outsideWS},
		{"/api/file/list", "out", throughLink},
		{"/api/file/list", "up", throughLink},
		{"/api/file/list", "in/deep", throughLink},
		{"/api/file/list", "in/backup", throughLink},
		{"/api/file/tree", "out", throughLink},
		{"/api/file/download", "secretlink", throughLink},
		{"/api/file/download", "out/secret.txt", throughLink},
		{"/api/file/download", "okdir/../out/secret.txt", throughLink},
		{"/api/file/download", "/etc/passwd", outsideWS},
		{"/api/file/download", "loop", "too many symbolic links"},
		{"/api/file/serve", "out/secret.txt", throughLink},
		{"/api/file/archive", "out", throughLink},
		{"/api/git/changes", "out", throughLink},
		{"/api/git/diff", "secretlink", throughLink},
		{"/api/git/diff", "../x", outsideWS},
	} {
		a := w.get(tc.route, url.Values{"path": {tc.path}})
		if a.status != http.StatusBadRequest || !strings.Contains(a.detail(), tc.want) {
			t.Errorf("%s?path=%s: %d %s, want 400 saying %q", tc.route, tc.path, a.status, a.body, tc.want)
		}
		if bytes.Contains(a.body, []byte("outside\n")) || bytes.Contains(a.body, []byte(`"outside"`)) {
			t.Errorf("%s?path=%s answered the outside file's content", tc.route, tc.path)
		}
	}
	for _, tc := range []struct{ path, content string }{{"okdir/ok.txt", "inside"}, {"oklink", "inside"}} {
		if a := w.get("/api/file/download", url.Values{"path": {tc.path}}); a.status != http.StatusOK || string(a.body) != tc.content {
			t.Errorf("download %s (a link inside the workspace): %d %s", tc.path, a.status, a.body)
		}
	}

	t.Run("uploads", func(t *testing.T) {
		w := w.in(t)
		for _, p := range []string{"../escape.txt", filepath.Join(outside, "new.txt"), "out/new.txt", "dangling", "up/new.txt"} {
			a := w.upload(p, "file", []byte("written"))
			if a.status != http.StatusBadRequest {
				t.Errorf("upload to %s: %d %s, want 400", p, a.status, a.body)
			}
		}
		entries, _ := os.ReadDir(outside)
		if len(entries) != 1 {
			t.Errorf("the directory outside holds %d entries after refused uploads, want only its own file", len(entries))
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(w.ws), "escape.txt")); err == nil {
			t.Error("an upload landed beside the workspace")
		}
	})
}

func TestFileTree(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	writeFiles(t, w.ws, map[string]string{
		"README.md": "", "src/main.go": "", "src/pkg/util.go": "", ".hidden": "",
		"node_modules/x/index.js": "", ".git/HEAD": "", "build/out.o": "", "src/__pycache__/m.pyc": "",
	})
	os.Symlink("README.md", filepath.Join(w.ws, "readme-link"))
	var files []string
	w.getJSON("/api/file/tree", nil, &files)
	want := []string{".hidden", "README.md", "src/main.go", "src/pkg/util.go"}
	if !slices.Equal(files, want) {
		t.Errorf("tree %v, want %v", files, want)
	}
	w.getJSON("/api/file/tree", url.Values{"path": {"src"}}, &files)
	if !slices.Equal(files, []string{"main.go", "pkg/util.go"}) {
		t.Errorf("tree of src %v", files)
	}
	if a := w.get("/api/file/tree", url.Values{"path": {"README.md"}}); a.status != http.StatusBadRequest {
		t.Errorf("tree of a file: %d %s, want 400", a.status, a.body)
	}
}

func TestDownload(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	content := strings.Repeat("0123456789", 1000)
	writeFiles(t, w.ws, map[string]string{"dir/data.csv": content})

	a := w.get("/api/file/download", url.Values{"path": {"dir/data.csv"}})
	if a.status != http.StatusOK || string(a.body) != content {
		t.Fatalf("download: %d, %d bytes", a.status, len(a.body))
	}
	if ct, cd := a.header.Get("Content-Type"), a.header.Get("Content-Disposition"); ct != "application/octet-stream" || cd != `attachment; filename=data.csv` {
		t.Errorf("headers: Content-Type %q, Content-Disposition %q", ct, cd)
	}
	part := w.do(http.MethodGet, "/api/file/download", url.Values{"path": {filepath.Join(w.ws, "dir/data.csv")}},
		http.Header{"Range": {"bytes=10-19"}}, nil)
	if part.status != http.StatusPartialContent || string(part.body) != "0123456789" {
		t.Errorf("range: %d %q", part.status, part.body)
	}

	for _, tc := range []struct {
		path   string
		status int
		detail string
	}{
		{"dir/missing.csv", http.StatusNotFound, "No such file or directory: " + filepath.Join(w.ws, "dir/missing.csv")},
		{"dir/data.csv/x", http.StatusNotFound, "No such file or directory"},
		{"dir", http.StatusBadRequest, "Not a file: " + filepath.Join(w.ws, "dir")},
		{"", http.StatusBadRequest, "Not a file: " + w.ws},
	} {
		a := w.get("/api/file/download", url.Values{"path": {tc.path}})
		if a.status != tc.status || !strings.HasPrefix(a.detail(), tc.detail) {
			t.Errorf("download %q: %d %s, want %d %q", tc.path, a.status, a.body, tc.status, tc.detail)
		}
	}
	if a := w.get("/api/file/download", nil); a.status != http.StatusUnprocessableEntity {
		t.Errorf("download without a path: %d %s, want 422", a.status, a.body)
	}
}

func TestServeInline(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	writeFiles(t, w.ws, map[string]string{"site/index.html": "<h1>hi</h1>", "site/app.js": "x()", "empty/.keep": ""})
	for _, tc := range []struct{ path, ctype, body string }{
		{"site/index.html", "text/html; charset=utf-8", "<h1>hi</h1>"},
		{"site", "text/html; charset=utf-8", "<h1>hi</h1>"},
		{"site/app.js", "text/javascript; charset=utf-8", "x()"},
	} {
		a := w.get("/api/file/serve", url.Values{"path": {tc.path}})
		if a.status != http.StatusOK || string(a.body) != tc.body || a.header.Get("Content-Type") != tc.ctype {
			t.Errorf("serve %s: %d %q %q", tc.path, a.status, a.header.Get("Content-Type"), a.body)
		}
		if a.header.Get("Content-Security-Policy") != "sandbox" || a.header.Get("Content-Disposition") != "" {
			t.Errorf("serve %s: CSP %q, disposition %q; want a sandboxed inline answer", tc.path,
				a.header.Get("Content-Security-Policy"), a.header.Get("Content-Disposition"))
		}
	}
	if a := w.get("/api/file/serve", url.Values{"path": {"empty"}}); a.status != http.StatusNotFound ||
		a.detail() != "No index.html in the directory "+filepath.Join(w.ws, "empty") {
		t.Errorf("serve a directory without index.html: %d %s", a.status, a.body)
	}
}

func TestUpload(t *testing.T) {
	w := newWorkspaceServer(t, 1<<20)
	content := bytes.Repeat([]byte("payload "), 1000)
	if a := w.upload("new/deep/file.bin", "file", content); a.status != http.StatusOK || string(a.body) != `{"success":true}`+"\n" {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	if got, err := os.ReadFile(filepath.Join(w.ws, "new/deep/file.bin")); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("uploaded file: %d bytes, %v", len(got), err)
	}
	if a := w.upload(filepath.Join(w.ws, "new/deep/file.bin"), "file", []byte("v2")); a.status != http.StatusOK {
		t.Fatalf("upload over a file: %d %s", a.status, a.body)
	}
	if got, _ := os.ReadFile(filepath.Join(w.ws, "new/deep/file.bin")); string(got) != "v2" {
		t.Errorf("after the second upload the file holds %q", got)
	}

	for _, tc := range []struct {
		name, path, field string
		size              int
		status            int
		detail            string
	}{
		{"onto a directory", "new/deep", "file", 10, http.StatusBadRequest, "Is a directory: " + filepath.Join(w.ws, "new/deep")},
		{"onto the workspace", "", "file", 10, http.StatusBadRequest, "The path names the workspace itself"},
		{"under a file", "new/deep/file.bin/x", "file", 10, http.StatusBadRequest, "is not a directory"},
		{"without the file field", "other.bin", "attachment", 10, http.StatusUnprocessableEntity, `"loc":["body","file"]`},
		{"too large", "big.bin", "file", 1<<20 + 1, http.StatusRequestEntityTooLarge, "larger than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := w.in(t)
			a := w.upload(tc.path, tc.field, bytes.Repeat([]byte("x"), tc.size))
			if a.status != tc.status || !strings.Contains(a.detail(), tc.detail) {
				t.Errorf("%d %s, want %d %q", a.status, a.body, tc.status, tc.detail)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(w.ws, "big.bin")); err == nil {
		t.Error("the upload over the bound left its file")
	}
	var leftovers []string
	filepath.WalkDir(w.ws, func(p string, d os.DirEntry, err error) error {
		if strings.HasPrefix(d.Name(), ".agentd-upload-") {
			leftovers = append(leftovers, p)
		}
		return nil
	})
	if len(leftovers) > 0 {
		t.Errorf("temporary upload files left behind: %v", leftovers)
	}
	if a := w.do(http.MethodPost, "/api/file/upload", url.Values{"path": {"x"}}, http.Header{"Content-Type": {"text/plain"}}, strings.NewReader("x")); a.status != http.StatusBadRequest ||
		!strings.Contains(a.detail(), "multipart/form-data") {
		t.Errorf("a body that is not multipart: %d %s", a.status, a.body)
	}
}
