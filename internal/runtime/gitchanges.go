package runtime

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (s *Server) handleGitChanges(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.GitChangesQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	changes, err := s.gitChanges(r.Context(), q.Path, q.Ref)
	if err != nil {
		s.writeFileError(w, "git changes", err)
		return
	}
	writeJSON(w, http.StatusOK, changes)
}

// gitChanges lists the files changed in the repository at dir, compared with a base (see
// gitCmd.base), untracked files included, and those of the repositories one level below it
// (a workspace often holds its clone in a subdirectory), their paths prefixed with the
// subdirectory. A directory in no repository has no changes.
func (s *Server) gitChanges(ctx context.Context, dir, ref string) ([]runtimeclient.GitChange, error) {
	p, err := s.resolve(dir)
	if err != nil {
		return nil, err
	}
	_, real := s.workspaceRoots()
	host := filepath.Join(real, p.rel)
	if fi, err := os.Stat(host); err != nil {
		return nil, fsError(err, p, false)
	} else if !fi.IsDir() {
		return nil, badPath("Not a directory: %s", p.abs)
	}
	nested := nestedRepos(host)
	changes := []runtimeclient.GitChange{}
	// Without a .git here or above (in the workspace), there is no repository to ask git
	// about, and a sandbox without git can say so too.
	if repoAt(real, p.rel) != "" {
		if changes, err = s.repoChanges(ctx, host, ref); err != nil {
			return nil, err
		}
	}
	changes = slices.DeleteFunc(changes, func(c runtimeclient.GitChange) bool {
		for _, n := range nested {
			if c.Path == n || strings.HasPrefix(c.Path, n+"/") {
				return true // reported by the nested repository itself
			}
		}
		return false
	})
	for _, n := range nested {
		sub, err := s.repoChanges(ctx, filepath.Join(host, n), ref)
		var refused *fileError
		if errors.As(err, &refused) {
			continue // a ref this repository does not have: it has no changes to show
		}
		if err != nil {
			return nil, err
		}
		for _, c := range sub {
			changes = append(changes, runtimeclient.GitChange{Status: c.Status, Path: n + "/" + c.Path})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// nestedRepos returns the subdirectories of dir that hold a repository of their own (a .git
// directory or file). Hidden ones and symbolic links are not looked into.
func nestedRepos(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, e.Name(), ".git")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// repoChanges lists the changes under dir in its repository; none when dir is in no
// repository's working tree.
func (s *Server) repoChanges(ctx context.Context, dir, ref string) ([]runtimeclient.GitChange, error) {
	g := s.git(dir)
	if ok, err := g.inWorkTree(ctx); err != nil || !ok {
		return []runtimeclient.GitChange{}, err
	}
	base, err := g.base(ctx, ref)
	if err != nil {
		return nil, err
	}
	g, done, err := g.withIndexCopy(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	// Rename detection off: a rename is then a deletion and an addition, which is what
	// OpenHands reports a detected rename as.
	out, err := g.run(ctx, "diff", "--name-status", "-z", "--no-renames", "--relative", "--no-ext-diff", base, "--")
	if err != nil {
		return nil, err
	}
	changes := []runtimeclient.GitChange{}
	fields := splitNUL(out)
	for i := 0; i+1 < len(fields); i += 2 {
		if st := changeStatus(fields[i]); st != "" {
			changes = append(changes, runtimeclient.GitChange{Status: st, Path: fields[i+1]})
		}
	}
	untracked, err := g.run(ctx, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	for _, f := range splitNUL(untracked) {
		changes = append(changes, runtimeclient.GitChange{Status: runtimeclient.GitAdded, Path: f})
	}
	return changes, nil
}

// changeStatus maps git's status letter: a type change (file to link) and an unmerged file
// count as updated, as OpenHands counts the latter.
func changeStatus(letter string) string {
	switch letter {
	case "A":
		return runtimeclient.GitAdded
	case "D":
		return runtimeclient.GitDeleted
	case "M", "T", "U":
		return runtimeclient.GitUpdated
	}
	return ""
}

func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// closestRepo returns the directory of the repository a workspace path is in (relative to the
// workspace, "." for its root): the nearest one holding a .git, from the path's own directory
// up to the workspace root; "" when there is none.
func closestRepo(real, rel string) string {
	return repoAt(real, filepath.Dir(rel))
}

// repoAt is closestRepo for a directory: the directory itself or the nearest above it in the
// workspace that holds a .git.
func repoAt(real, dir string) string {
	for dir = filepath.ToSlash(dir); ; dir = path.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(real, dir, ".git")); err == nil {
			return dir
		}
		if dir == "." {
			return ""
		}
	}
}
