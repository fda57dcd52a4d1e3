package runtime

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readArchive reads a tar.gz answer into member name → content ("" for directories).
func readArchive(t *testing.T, body []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read the archive: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[h.Name]; dup {
			t.Errorf("member %s twice", h.Name)
		}
		out[h.Name] = string(b)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestArchive(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "outside"})
	writeFiles(t, w.ws, map[string]string{
		"README.md": "readme", "src/main.go": "package main", "src/gen/data.pyc": "compiled",
		"node_modules/lib/index.js": "dep", "build/out.o": "obj", "notes.log": "log",
		".git/HEAD": "ref: refs/heads/main\n",
	})
	os.Symlink(outside, filepath.Join(w.ws, "outlink"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(w.ws, "secretlink"))
	top := filepath.Base(w.ws)

	a := w.get("/api/file/archive", nil)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/gzip" ||
		a.header.Get("Content-Disposition") != `attachment; filename=`+top+`.tar.gz` {
		t.Fatalf("archive: %d %v", a.status, a.header)
	}
	members := readArchive(t, a.body)
	want := []string{top + "/", top + "/.git/", top + "/.git/HEAD", top + "/README.md", top + "/archive_manifest.json",
		top + "/notes.log", top + "/src/", top + "/src/gen/", top + "/src/main.go"}
	if got := keys(members); !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if members[top+"/src/main.go"] != "package main" {
		t.Errorf("main.go holds %q", members[top+"/src/main.go"])
	}
	var m archiveManifest
	if err := json.Unmarshal([]byte(members[top+"/archive_manifest.json"]), &m); err != nil {
		t.Fatal(err)
	}
	if m.FileCount != 4 || m.TotalBytes != int64(len("readme")+len("package main")+len("log")+len("ref: refs/heads/main\n")) ||
		m.Format != "tar.gz" || m.Source != top || !slices.Equal(m.Excludes, defaultArchiveExcludes) {
		t.Errorf("manifest %+v", m)
	}
	for name, content := range members {
		if strings.Contains(content, "outside") {
			t.Errorf("member %s holds the content of a file outside the workspace", name)
		}
	}

	t.Run("without the default excludes, with own ones", func(t *testing.T) {
		w := w.in(t)
		a := w.get("/api/file/archive", url.Values{"use_default_excludes": {"false"}, "exclude": {"*.log", ".git/"}, "format": {"tar.gz"}})
		members := readArchive(t, a.body)
		for _, name := range []string{"node_modules/lib/index.js", "build/out.o", "src/gen/data.pyc"} {
			if _, ok := members[top+"/"+name]; !ok {
				t.Errorf("%s missing without the default excludes: %v", name, keys(members))
			}
		}
		for _, name := range []string{"notes.log", ".git/HEAD"} {
			if _, ok := members[top+"/"+name]; ok {
				t.Errorf("%s archived though excluded", name)
			}
		}
	})

	t.Run("a subdirectory", func(t *testing.T) {
		w := w.in(t)
		a := w.get("/api/file/archive", url.Values{"path": {"src"}})
		if got := keys(readArchive(t, a.body)); !slices.Equal(got, []string{"src/", "src/archive_manifest.json", "src/gen/", "src/main.go"}) {
			t.Errorf("members %v", got)
		}
	})

	for _, tc := range []struct {
		q      url.Values
		status int
		detail string
	}{
		{url.Values{"format": {"git-delta"}}, http.StatusBadRequest, `Unsupported archive format "git-delta": only tar.gz is served`},
		{url.Values{"path": {"README.md"}}, http.StatusBadRequest, "Not a directory: " + filepath.Join(w.ws, "README.md")},
		{url.Values{"path": {"nowhere"}}, http.StatusNotFound, "No such file or directory: " + filepath.Join(w.ws, "nowhere")},
		{url.Values{"exclude": {"[a"}}, http.StatusBadRequest, `Bad exclude pattern "[a"`},
	} {
		if a := w.get("/api/file/archive", tc.q); a.status != tc.status || a.detail() != tc.detail {
			t.Errorf("archive %s: %d %s, want %d %q", tc.q.Encode(), a.status, a.body, tc.status, tc.detail)
		}
	}
}
