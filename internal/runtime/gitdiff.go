package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (s *Server) handleGitDiff(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.GitDiffQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	diff, err := s.gitDiff(r.Context(), q.Path, q.Ref)
	if err != nil {
		s.writeFileError(w, "git diff", err)
		return
	}
	writeJSON(w, http.StatusOK, diff)
}

// gitDiff returns a file's text now and at the base its repository's changes are shown
// against (see gitCmd.base). A file that was deleted has only an original, a new one only a
// modified text; one that exists neither here nor at the base is a 404. A file in no
// repository has neither side (null), as in OpenHands.
func (s *Server) gitDiff(ctx context.Context, name, ref string) (runtimeclient.GitDiff, error) {
	p, err := s.resolve(name)
	if err != nil {
		return runtimeclient.GitDiff{}, err
	}
	if p.rel == "." {
		return runtimeclient.GitDiff{}, badPath("Is a directory: %s", p.abs)
	}
	root, err := s.openRoot()
	if err != nil {
		return runtimeclient.GitDiff{}, err
	}
	defer root.Close()
	notFound := &fileError{status: http.StatusNotFound, detail: "No such file, here or at the base: " + p.abs}
	fi, err := root.Stat(p.rel)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return runtimeclient.GitDiff{}, fsError(err, p, false)
	case exists && fi.IsDir():
		return runtimeclient.GitDiff{}, badPath("Is a directory: %s", p.abs)
	case exists && !fi.Mode().IsRegular():
		return runtimeclient.GitDiff{}, badPath("Not a file: %s", p.abs)
	case exists && fi.Size() > runtimeclient.MaxDiffFileBytes:
		return runtimeclient.GitDiff{}, tooLargeForDiff(p)
	}

	_, real := s.workspaceRoots()
	repo := closestRepo(real, p.rel)
	g := s.git(filepath.Join(real, repo))
	inRepo := false
	if repo != "" {
		if inRepo, err = g.inWorkTree(ctx); err != nil {
			return runtimeclient.GitDiff{}, err
		}
	}
	if !inRepo {
		if !exists {
			return runtimeclient.GitDiff{}, notFound
		}
		return runtimeclient.GitDiff{}, nil
	}
	base, err := g.base(ctx, ref)
	if err != nil {
		return runtimeclient.GitDiff{}, err
	}
	inRepoPath, _ := filepath.Rel(repo, p.rel)
	original, found, err := g.blob(ctx, base, filepath.ToSlash(inRepoPath))
	if errors.Is(err, errBlobTooLarge) {
		return runtimeclient.GitDiff{}, tooLargeForDiff(p)
	}
	if err != nil {
		return runtimeclient.GitDiff{}, err
	}
	if !exists && !found {
		return runtimeclient.GitDiff{}, notFound
	}
	var modified []byte
	if exists {
		f, err := root.Open(p.rel)
		if err != nil {
			return runtimeclient.GitDiff{}, fsError(err, p, false)
		}
		modified, err = io.ReadAll(io.LimitReader(f, runtimeclient.MaxDiffFileBytes+1))
		f.Close()
		if err != nil {
			return runtimeclient.GitDiff{}, fsError(err, p, false)
		}
		if len(modified) > runtimeclient.MaxDiffFileBytes {
			return runtimeclient.GitDiff{}, tooLargeForDiff(p)
		}
	}
	return runtimeclient.GitDiff{Modified: text(modified), Original: text(original)}, nil
}

func tooLargeForDiff(p wsPath) error {
	return badPath("The file is too large for a diff (over %d bytes): %s", runtimeclient.MaxDiffFileBytes, p.abs)
}

// text is b as a string when it is UTF-8 text; other content (an image, a binary) has no
// text to compare, "" as in OpenHands.
func text(b []byte) *string {
	s := ""
	if utf8.Valid(b) {
		s = string(b)
	}
	return &s
}

// errBlobTooLarge: the file at the base is over MaxDiffFileBytes.
var errBlobTooLarge = errors.New("blob too large for a diff")

// blob returns a file's content at a commit, and whether it is there. Content over
// MaxDiffFileBytes is not read (errBlobTooLarge).
func (g gitCmd) blob(ctx context.Context, commit, file string) ([]byte, bool, error) {
	obj := fmt.Sprintf("%s:%s", commit, file)
	size, err := g.line(ctx, "cat-file", "-s", obj)
	var ge *gitError
	if errors.As(err, &ge) {
		return nil, false, nil // not at that commit
	}
	if err != nil {
		return nil, false, err
	}
	if n, err := strconv.ParseInt(size, 10, 64); err != nil {
		return nil, false, fmt.Errorf("git cat-file -s %s: %q", obj, size)
	} else if n > runtimeclient.MaxDiffFileBytes {
		return nil, true, errBlobTooLarge
	}
	out, err := g.run(ctx, "cat-file", "blob", obj)
	if errors.As(err, &ge) {
		return nil, false, nil // not a file there (a directory, a submodule)
	}
	return out, err == nil, err
}
