package runtime

import (
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

// workspaceRoutes adds the routes that read and write the workspace without the agent.
func (s *Server) workspaceRoutes() {
	s.mux.Handle(runtimeclient.RouteFileList, only(http.MethodGet, s.handleFileList))
	s.mux.Handle(runtimeclient.RouteFileTree, only(http.MethodGet, s.handleFileTree))
	s.mux.Handle(runtimeclient.RouteFileDownload, only(http.MethodGet, s.handleDownload))
	s.mux.Handle(runtimeclient.RouteFileServe, only(http.MethodGet, s.handleServe))
	s.mux.Handle(runtimeclient.RouteFileUpload, only(http.MethodPost, s.handleUpload))
	s.mux.Handle(runtimeclient.RouteFileArchive, only(http.MethodGet, s.handleArchive))
	s.mux.Handle(runtimeclient.RouteGitChanges, only(http.MethodGet, s.handleGitChanges))
	s.mux.Handle(runtimeclient.RouteGitDiff, only(http.MethodGet, s.handleGitDiff))
}

// decodeQuery decodes r's query into dst, answering 422 itself when it does not fit.
func decodeQuery(w http.ResponseWriter, r *http.Request, dst any) bool {
	err := wire.DecodeQuery(r.URL.Query(), dst)
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
		return false
	}
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return false
	}
	return true
}

func (s *Server) handleFileList(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.FileListQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	page, err := s.listDir(q)
	if err != nil {
		s.writeFileError(w, "list directory", err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// listDir lists one page of a directory. The names are read whole to be sorted; only the
// page's entries are looked at.
func (s *Server) listDir(q runtimeclient.FileListQuery) (runtimeclient.FilePage, error) {
	p, err := s.resolve(q.Path)
	if err != nil {
		return runtimeclient.FilePage{}, err
	}
	root, err := s.openRoot()
	if err != nil {
		return runtimeclient.FilePage{}, err
	}
	defer root.Close()
	dir, err := root.Open(p.rel)
	if err != nil {
		return runtimeclient.FilePage{}, fsError(err, p, false)
	}
	defer dir.Close()
	if fi, err := dir.Stat(); err != nil {
		return runtimeclient.FilePage{}, fsError(err, p, false)
	} else if !fi.IsDir() {
		return runtimeclient.FilePage{}, badPath("Not a directory: %s", p.abs)
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return runtimeclient.FilePage{}, fsError(err, p, false)
	}
	sort.Strings(names)
	start, _ := slices.BinarySearch(names, q.PageID)
	end := min(start+q.Limit, len(names))
	page := runtimeclient.FilePage{Items: make([]runtimeclient.FileEntry, 0, end-start)}
	for _, name := range names[start:end] {
		fi, err := root.Lstat(filepath.Join(p.rel, name))
		if err != nil {
			continue // removed since it was listed
		}
		page.Items = append(page.Items, runtimeclient.FileEntry{
			Name: name, Path: filepath.Join(p.abs, name), Type: fileType(fi.Mode()),
			Size: fi.Size(), ModifiedAt: fi.ModTime().UTC(),
		})
	}
	if end < len(names) {
		page.NextPageID = &names[end]
	}
	return page, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// treeSkipped are the directories a tree listing does not enter, as in OpenHands: version
// control, dependencies, builds and caches.
var treeSkipped = map[string]bool{
	".git": true, "node_modules": true, ".venv": true, "venv": true, "__pycache__": true,
	"dist": true, "build": true, ".next": true, ".cache": true, ".pytest_cache": true,
	".mypy_cache": true, ".turbo": true, ".parcel-cache": true, "target": true,
}

// errTreeFull ends a tree walk that found enough files.
var errTreeFull = errors.New("tree full")

func (s *Server) handleFileTree(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.FileTreeQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	files, err := s.tree(q.Path)
	if err != nil {
		s.writeFileError(w, "list tree", err)
		return
	}
	writeJSON(w, http.StatusOK, files)
}

// tree lists the regular files below a directory, relative to it, sorted, at most
// MaxTreeFiles of them (the first ones met, depth first in name order).
func (s *Server) tree(dir string) ([]string, error) {
	p, err := s.resolve(dir)
	if err != nil {
		return nil, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Stat(p.rel); err != nil {
		return nil, fsError(err, p, false)
	} else if !fi.IsDir() {
		return nil, badPath("Not a directory: %s", p.abs)
	}
	files := []string{}
	err = fs.WalkDir(root.FS(), filepath.ToSlash(p.rel), func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory is left out, as find leaves it out
		}
		if d.IsDir() && treeSkipped[d.Name()] && name != filepath.ToSlash(p.rel) {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel := name
		if p.rel != "." {
			rel = strings.TrimPrefix(name, filepath.ToSlash(p.rel)+"/")
		}
		files = append(files, rel)
		if len(files) >= runtimeclient.MaxTreeFiles {
			return errTreeFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errTreeFull) {
		return nil, fsError(err, p, false)
	}
	sort.Strings(files)
	return files, nil
}

func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.FileQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	s.serveFile(w, r, q.Path, false)
}

func (s *Server) handleServe(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.FileQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	s.serveFile(w, r, q.Path, true)
}

// serveFile streams a file. A download is an attachment of type application/octet-stream, as
// OpenHands sends it. Served inline (the workspace as a static site), the type follows the
// name and a directory stands for its index.html; the page then runs in a sandbox of its own
// (no scripts, no origin), because it comes from the agent and must not act as the API's
// origin in a browser.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string, inline bool) {
	p, err := s.resolve(name)
	if err != nil {
		s.writeFileError(w, "serve file", err)
		return
	}
	root, err := s.openRoot()
	if err != nil {
		s.writeFileError(w, "serve file", err)
		return
	}
	defer root.Close()
	f, err := root.Open(p.rel)
	if err != nil {
		s.writeFileError(w, "serve file", fsError(err, p, false))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.writeFileError(w, "serve file", fsError(err, p, false))
		return
	}
	if fi.IsDir() && inline {
		f.Close()
		index := wsPath{rel: filepath.Join(p.rel, "index.html"), abs: filepath.Join(p.abs, "index.html")}
		if f, err = root.Open(index.rel); err != nil {
			s.writeFileError(w, "serve file", &fileError{status: http.StatusNotFound, detail: "No index.html in the directory " + p.abs})
			return
		}
		defer f.Close()
		if fi, err = f.Stat(); err != nil {
			s.writeFileError(w, "serve file", fsError(err, index, false))
			return
		}
		p = index
	}
	if !fi.Mode().IsRegular() {
		s.writeFileError(w, "serve file", badPath("Not a file: %s", p.abs))
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if inline {
		ctype := mime.TypeByExtension(path.Ext(fi.Name()))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.Set("Content-Type", ctype)
		h.Set("Content-Security-Policy", "sandbox")
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fi.Name()}))
	}
	// ServeContent streams from the file and answers ranges and conditional requests.
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
