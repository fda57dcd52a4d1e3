package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed while resolving one path, as the kernel does.
const maxLinks = 40

// wsPath is a path inside the workspace, resolved: no symbolic link among its existing
// components leads out of the workspace.
type wsPath struct {
	// rel is relative to the workspace root, "." for the root itself; the os.Root methods
	// take it as it is.
	rel string
	// abs is the path as the sandbox sees it, for answers.
	abs string
}

// fileError is a workspace request the runtime refuses: its status and the detail for the
// client.
type fileError struct {
	status int
	detail string
}

func (e *fileError) Error() string { return e.detail }

func badPath(format string, args ...any) error {
	return &fileError{status: http.StatusBadRequest, detail: fmt.Sprintf(format, args...)}
}

// workspaceRoots returns the workspace as configured and as resolved (they differ when the
// configured path goes through a symbolic link).
func (s *Server) workspaceRoots() (string, string) {
	ws := filepath.Clean(s.cfg.Workspace)
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return ws, ws
	}
	return ws, real
}

// within returns p relative to root when p is root or below it.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// resolve confines a path a client gave to the workspace. An absolute path must lie in the
// workspace; a relative one is taken from the workspace's root. Symbolic links among the
// components that exist are followed here, so that a link pointing out of the workspace is a
// clear refusal rather than a file read from elsewhere; the file operations then go through an
// os.Root, which refuses any link that a concurrent change made lead out.
func (s *Server) resolve(p string) (wsPath, error) {
	ws, real := s.workspaceRoots()
	if strings.ContainsRune(p, 0) {
		return wsPath{}, badPath("The path must not contain NUL bytes")
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(ws, full)
	}
	full = filepath.Clean(full)
	if err := checkLength(full); err != nil {
		return wsPath{}, err
	}
	rel, ok := within(ws, full)
	if !ok {
		if rel, ok = within(real, full); !ok {
			return wsPath{}, badPath("The path %s is outside the workspace %s", p, ws)
		}
	}
	rel, err := followLinks(ws, real, rel, p)
	if err != nil {
		return wsPath{}, err
	}
	return wsPath{rel: rel, abs: filepath.Join(ws, rel)}, nil
}

// Linux's bounds on a path (PATH_MAX, with its final NUL) and on each name in it (NAME_MAX).
const (
	maxPathBytes = 4095
	maxNameBytes = 255
)

// checkLength refuses a path the kernel would refuse as too long (ENAMETOOLONG), saying which
// bound it passes; the path itself, which may be huge, is not repeated.
func checkLength(full string) error {
	if len(full) > maxPathBytes {
		return badPath("The path is %d bytes long; a path has at most %d", len(full), maxPathBytes)
	}
	for name := range strings.SplitSeq(full, string(filepath.Separator)) {
		if len(name) > maxNameBytes {
			return badPath("A name in the path is %d bytes long; a file name has at most %d", len(name), maxNameBytes)
		}
	}
	return nil
}

// followLinks replaces every symbolic link among rel's existing components by its target,
// refusing a target outside the workspace. The components after the first one that does not
// exist are kept as they are.
func followLinks(ws, real, rel, asked string) (string, error) {
	var done []string
	todo := splitRel(rel)
	for links := 0; len(todo) > 0; {
		next := append(done, todo[0])
		fi, err := os.Lstat(filepath.Join(real, filepath.Join(next...)))
		if err != nil {
			// Nothing further exists: the rest is taken as written.
			done = append(done, todo...)
			break
		}
		todo = todo[1:]
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", badPath("The path %s goes through too many symbolic links", asked)
		}
		target, err := os.Readlink(filepath.Join(real, filepath.Join(next...)))
		if err != nil {
			return "", fmt.Errorf("read link: %w", err)
		}
		var to string
		var ok bool
		if filepath.IsAbs(target) {
			target = filepath.Clean(target)
			if to, ok = within(ws, target); !ok {
				to, ok = within(real, target)
			}
		} else {
			to, ok = within(".", filepath.Join(filepath.Join(done...), target))
		}
		if !ok {
			return "", badPath("The path %s leads out of the workspace through the symbolic link %s (to %s)",
				asked, filepath.Join(ws, filepath.Join(next...)), target)
		}
		done = nil
		todo = append(splitRel(to), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, string(filepath.Separator))
}

// openRoot opens the workspace for confined file operations.
func (s *Server) openRoot() (*os.Root, error) {
	_, real := s.workspaceRoots()
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return root, nil
}

// fsError turns an error of a file operation on p into the answer a client gets: a missing
// file is a 404, a file where a directory was needed is a 404 for a read and a 400 for a
// write, and a refused permission a 403. Anything else is the runtime's own failure.
func fsError(err error, p wsPath, write bool) error {
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return &fileError{status: http.StatusNotFound, detail: "No such file or directory: " + p.abs}
	case errors.Is(err, syscall.ENOTDIR) && write:
		return badPath("A parent of %s is not a directory", p.abs)
	case errors.Is(err, syscall.ENOTDIR):
		return &fileError{status: http.StatusNotFound, detail: "No such file or directory: " + p.abs}
	case errors.Is(err, syscall.EISDIR):
		return badPath("Is a directory: %s", p.abs)
	case errors.Is(err, fs.ErrPermission):
		return &fileError{status: http.StatusForbidden, detail: "Permission denied: " + p.abs}
	case errors.Is(err, syscall.ENAMETOOLONG):
		return badPath("The path %s is too long", p.abs)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &fileError{status: http.StatusInsufficientStorage, detail: "No space left in the workspace"}
	}
	return err
}

// writeFileError answers a refused workspace request, or logs the runtime's own failure and
// answers 500.
func (s *Server) writeFileError(w http.ResponseWriter, op string, err error) {
	var fe *fileError
	if errors.As(err, &fe) {
		writeDetail(w, fe.status, fe.detail)
		return
	}
	s.log.Error(op, "err", err)
	writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
}
