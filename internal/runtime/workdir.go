package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (s *Server) handleWorkDir(w http.ResponseWriter, r *http.Request) {
	var req runtimeclient.WorkDirRequest
	if !s.decodeBody(w, r, 64<<10, &req) {
		return
	}
	req.GitAfterAnswer = preferAsync(r)
	res, err := s.makeWorkDir(r.Context(), req)
	if err != nil {
		s.writeFileError(w, "make a work directory", err)
		return
	}
	if res.Git == runtimeclient.WorkDirGitStarted {
		w.Header().Set("Preference-Applied", runtimeclient.PreferAsync)
	}
	writeJSON(w, http.StatusOK, res)
}

// preferAsync reports whether r prefers an answer before its slow part is done (RFC 7240).
func preferAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for p := range strings.SplitSeq(v, ",") {
			if name, _, _ := strings.Cut(p, ";"); strings.EqualFold(strings.TrimSpace(name), runtimeclient.PreferAsync) {
				return true
			}
		}
	}
	return false
}

// makeWorkDir makes req's directory through an os.Root of the workspace (no symbolic link
// leads it out), as the sandbox user the runtime works as, then the repository req asks for,
// before the answer or, when req.GitAfterAnswer, after it. One repository is made at a time
// (s.inits): a second request for the same directory finds the first one's .git, where it
// would otherwise make its own and append the author again.
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
	if err := s.inits.begin(ctx); err != nil {
		return runtimeclient.WorkDirResult{}, err
	}
	if _, err := root.Lstat(path.Join(req.Dir, ".git")); err == nil {
		s.inits.end()
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitExists}, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		s.inits.end()
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitMissing}, nil
	}
	if !req.GitAfterAnswer {
		defer s.inits.end()
		return s.initRepository(ctx, req), nil
	}
	go func() {
		defer s.inits.end()
		res := s.initRepository(s.inits.ctx, req)
		if res.Git != runtimeclient.WorkDirGitCreated {
			s.log.Warn("the directory is no git repository: git init failed", "dir", req.Dir, "git", res.Git, "detail", res.Detail)
		}
	}()
	return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitStarted}, nil
}

// initRepository makes a git repository in req's directory, which exists: git init as the
// sandbox user, in the image's way (its templates, its default branch), and the author
// appended to the repository's configuration here rather than by two more git processes.
func (s *Server) initRepository(ctx context.Context, req runtimeclient.WorkDirRequest) runtimeclient.WorkDirResult {
	if _, err := s.git(filepath.Join(s.cfg.Workspace, filepath.FromSlash(req.Dir))).run(ctx, "init", "-q"); err != nil {
		if errors.Is(err, errNoGit) {
			return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitMissing}
		}
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitFailed, Detail: err.Error()}
	}
	root, err := os.OpenRoot(s.cfg.Workspace)
	if err == nil {
		var f *os.File
		f, err = root.OpenFile(path.Join(req.Dir, ".git", "config"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = fmt.Fprintf(f, "[user]\n\tname = %s\n\temail = %s\n", gitConfigValue(req.Git.Name), gitConfigValue(req.Git.Email))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		root.Close()
	}
	if err != nil {
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitFailed, Detail: "set the commit author: " + problemOf(err)}
	}
	return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitCreated}
}

// workInits lets one repository be made at a time (a work-dir request's git init, before or
// after its answer). Every request that may touch the workspace waits until none is being
// made (Server.ServeHTTP), so that the agent's first command, or a listing of its changes,
// finds the repository whole.
type workInits struct {
	ctx    context.Context // ends with the server: a git init still running is killed
	cancel context.CancelFunc
	mu     sync.Mutex
	busy   chan struct{} // closed when the repository being made is whole; nil while none is
	held   int           // requests waiting for busy
}

// errClosing: the runtime is closed and makes no more repositories.
var errClosing = &fileError{status: http.StatusServiceUnavailable, detail: "The runtime is shutting down"}

func newWorkInits() *workInits {
	ctx, cancel := context.WithCancel(context.Background())
	return &workInits{ctx: ctx, cancel: cancel}
}

// begin waits until no repository is being made, then marks one as being made until end. It
// fails with errClosing once the server is closed, or with ctx's error.
func (p *workInits) begin(ctx context.Context) error {
	for {
		if err := p.wait(ctx); err != nil {
			return err
		}
		p.mu.Lock()
		switch {
		case p.ctx.Err() != nil:
			p.mu.Unlock()
			return errClosing
		case p.busy == nil:
			p.busy = make(chan struct{})
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock() // another began first: wait for it too
	}
}

func (p *workInits) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.busy)
	p.busy = nil
}

// wait returns once no repository is being made, or when ctx ends.
func (p *workInits) wait(ctx context.Context) error {
	p.mu.Lock()
	busy := p.busy
	if busy != nil {
		p.held++
	}
	p.mu.Unlock()
	if busy == nil {
		return nil
	}
	defer func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}()
	select {
	case <-busy:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiting is how many requests wait for the repositories being made.
func (p *workInits) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// close kills the git inits still running and refuses new ones.
func (p *workInits) close() { p.cancel() }

// gitConfigValue quotes v as a value of git's configuration files: in double quotes, where a
// backslash and a double quote are escaped and nothing else is special (v is one line, as
// the request's validation holds).
func gitConfigValue(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
