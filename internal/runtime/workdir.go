package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (s *Server) handleWorkDir(w http.ResponseWriter, r *http.Request) {
	var req runtimeclient.WorkDirRequest
	if !s.decodeBody(w, r, 64<<10, &req) {
		return
	}
	res, err := s.makeWorkDir(r.Context(), req)
	if err != nil {
		s.writeFileError(w, "make a work directory", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
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
