package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

func (s *Server) handleWorkDir(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		return
	}
	var req runtimeclient.WorkDirRequest
	if err := wire.DecodeJSON(body, &req); err != nil {
		var invalid *wire.Error
		if errors.As(err, &invalid) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
			return
		}
		s.log.Error("decode work directory request", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	res, err := s.makeWorkDir(r.Context(), req)
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		writeDetail(w, fe.status, fe.detail)
	case err != nil:
		s.log.Error("make a work directory", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

// makeWorkDir makes req's directory through an os.Root of the workspace (no symbolic link
// leads it out), as the sandbox user the runtime works as, then the repository req asks for:
// git init as that user, in the image's way (its templates, its default branch), and the
// author appended to the repository's configuration here rather than by two more git
// processes.
func (s *Server) makeWorkDir(ctx context.Context, req runtimeclient.WorkDirRequest) (runtimeclient.WorkDirResult, error) {
	root, err := os.OpenRoot(s.cfg.Workspace)
	if err != nil {
		return runtimeclient.WorkDirResult{}, err
	}
	defer root.Close()
	if err := root.MkdirAll(req.Dir, 0o755); err != nil {
		return runtimeclient.WorkDirResult{}, &fileError{status: http.StatusConflict,
			detail: fmt.Sprintf("%s could not be made in the workspace: %s", req.Dir, problemOf(err))}
	}
	if req.Git == nil {
		return runtimeclient.WorkDirResult{}, nil
	}
	if _, err := root.Lstat(path.Join(req.Dir, ".git")); err == nil {
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitExists}, nil
	}
	if _, err := s.git(filepath.Join(s.cfg.Workspace, filepath.FromSlash(req.Dir))).run(ctx, "init", "-q"); err != nil {
		if errors.Is(err, errNoGit) {
			return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitMissing}, nil
		}
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitFailed, Detail: err.Error()}, nil
	}
	f, err := root.OpenFile(path.Join(req.Dir, ".git", "config"), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = fmt.Fprintf(f, "[user]\n\tname = %s\n\temail = %s\n", gitConfigValue(req.Git.Name), gitConfigValue(req.Git.Email))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitFailed, Detail: "set the commit author: " + problemOf(err)}, nil
	}
	return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitCreated}, nil
}

// gitConfigValue quotes v as a value of git's configuration files: in double quotes, where a
// backslash and a double quote are escaped and nothing else is special (v is one line, as
// the request's validation holds).
func gitConfigValue(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
