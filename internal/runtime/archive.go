package runtime

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// archiveFormat is the one format the archive route serves. OpenHands also makes a git patch
// (git-delta); agentd leaves that to GET /api/git/changes and /api/git/diff.
const archiveFormat = "tar.gz"

// archiveManifestName is the member that says what the archive holds, as in OpenHands.
const archiveManifestName = "archive_manifest.json"

// defaultArchiveExcludes are left out of every archive unless the client says otherwise:
// dependencies, virtual environments, builds and caches, which make an archive large and can
// be made again. They are OpenHands' defaults; each is matched against every path component,
// a trailing slash ignored.
var defaultArchiveExcludes = []string{
	"node_modules/", ".venv/", "venv/", "__pycache__/", ".mypy_cache/", ".pytest_cache/",
	".ruff_cache/", "dist/", "build/", ".next/", "target/", "*.pyc",
}

// archiveManifest is the archive's last member.
type archiveManifest struct {
	Excludes   []string `json:"excludes"`
	FileCount  int      `json:"file_count"`
	Format     string   `json:"format"`
	Source     string   `json:"source"`
	TotalBytes int64    `json:"total_bytes"`
}

func (s *Server) handleArchive(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.ArchiveQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	a, err := s.prepareArchive(q)
	if err != nil {
		s.writeFileError(w, "archive", err)
		return
	}
	defer a.root.Close()
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.name + ".tar.gz"}))
	w.WriteHeader(http.StatusOK)
	if err := a.write(w, s); err != nil {
		// The status is sent: breaking the connection is the only way left to tell the
		// client that the archive is not whole.
		s.log.Error("archive", "path", a.dir.abs, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// archive is one archive being written.
type archive struct {
	root     *os.Root
	dir      wsPath
	name     string // the top directory of every member
	excludes []string
}

// prepareArchive checks the request; errors here can still be answered with a status.
func (s *Server) prepareArchive(q runtimeclient.ArchiveQuery) (*archive, error) {
	if q.Format != "" && q.Format != archiveFormat {
		return nil, badPath("Unsupported archive format %q: only %s is served", q.Format, archiveFormat)
	}
	var excludes []string
	if q.UseDefaultExcludes == nil || *q.UseDefaultExcludes {
		excludes = append(excludes, defaultArchiveExcludes...)
	}
	for _, e := range q.Exclude {
		if _, err := path.Match(strings.TrimRight(e, "/"), ""); err != nil || strings.TrimRight(e, "/") == "" {
			return nil, badPath("Bad exclude pattern %q", e)
		}
		excludes = append(excludes, e)
	}
	p, err := s.resolve(q.Path)
	if err != nil {
		return nil, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	fi, err := root.Stat(p.rel)
	if err == nil && !fi.IsDir() {
		err = badPath("Not a directory: %s", p.abs)
	}
	if err != nil {
		root.Close()
		return nil, fsError(err, p, false)
	}
	name := filepath.Base(p.abs)
	if name == "/" || name == "." {
		name = "workspace"
	}
	return &archive{root: root, dir: p, name: name, excludes: excludes}, nil
}

// excluded reports whether a path (slash-separated, relative to the archived directory) is
// left out: one of its components matches a pattern.
func (a *archive) excluded(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		for _, pat := range a.excludes {
			if ok, _ := path.Match(strings.TrimRight(pat, "/"), part); ok {
				return true
			}
		}
	}
	return false
}

// write streams the archive: the directories and regular files below the archived directory
// (symbolic links and special files are left out, so nothing outside the workspace gets in),
// each under the directory's own name, and a manifest last. Nothing is held whole in memory.
func (a *archive) write(w io.Writer, s *Server) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed) // the CPU is shared with the agent
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	m := archiveManifest{Excludes: a.excludes, Format: archiveFormat, Source: a.name}
	if m.Excludes == nil {
		m.Excludes = []string{}
	}
	top := filepath.ToSlash(a.dir.rel)
	err = fs.WalkDir(a.root.FS(), top, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory is left out, as an archiver skips it
		}
		rel := "."
		if name != top {
			rel = strings.TrimPrefix(name, top+"/")
			if top == "." {
				rel = name
			}
			if a.excluded(rel) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		switch {
		case d.IsDir():
			return a.addDir(tw, name, rel)
		case d.Type().IsRegular():
			n, err := a.addFile(tw, name, rel, s)
			m.FileCount++
			m.TotalBytes += n
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: a.name + "/" + archiveManifestName,
		Mode: 0o644, Size: int64(len(manifest)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func (a *archive) member(rel string) string {
	if rel == "." {
		return a.name
	}
	return a.name + "/" + rel
}

func (a *archive) addDir(tw *tar.Writer, name, rel string) error {
	fi, err := a.root.Lstat(name)
	if err != nil {
		return nil // gone since it was listed
	}
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: a.member(rel) + "/",
		Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()})
}

// addFile adds a regular file with the size it had when opened. A file that grows meanwhile
// is cut at that size; one that shrinks is padded with zeros to keep the archive readable, as
// GNU tar does, and the log says so.
func (a *archive) addFile(tw *tar.Writer, name, rel string, s *Server) (int64, error) {
	f, err := a.root.Open(name)
	if err != nil {
		return 0, nil // gone, or unreadable: left out
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, nil // replaced by something else since it was listed
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: a.member(rel),
		Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return 0, err
	}
	n, err := io.CopyN(tw, f, fi.Size())
	if errors.Is(err, io.EOF) {
		s.log.Warn("archive: file shrank while read; padded with zeros", "path", filepath.Join(a.dir.abs, rel), "missing_bytes", fi.Size()-n)
		_, err = io.CopyN(tw, zeros{}, fi.Size()-n)
	}
	if err != nil {
		return n, fmt.Errorf("archive %s: %w", rel, err)
	}
	return fi.Size(), nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
