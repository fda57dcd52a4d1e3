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
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (w *wsServer) changes(q url.Values) []string {
	w.t.Helper()
	var changes []runtimeclient.GitChange
	w.getJSON("/api/git/changes", q, &changes)
	out := []string{}
	for _, c := range changes {
		out = append(out, c.Status+" "+c.Path)
	}
	return out
}

func (w *wsServer) diff(path string, q url.Values) (runtimeclient.GitDiff, answer) {
	w.t.Helper()
	if q == nil {
		q = url.Values{}
	}
	q.Set("path", path)
	var d runtimeclient.GitDiff
	a := w.get("/api/git/diff", q)
	if a.status == http.StatusOK {
		w.getJSON("/api/git/diff", q, &d)
	}
	return d, a
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// commitAll commits everything in dir.
func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", msg)
}

// TestGitChanges: each kind of change of a repository without a remote (compared with HEAD),
// a rename as a deletion and an addition, untracked files added, ignored ones left out.
func TestGitChanges(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	gitIn(t, w.ws, "init", "-q")
	writeFiles(t, w.ws, map[string]string{
		"keep.txt": "keep", "mod.txt": "before", "del.txt": "gone soon", "old name.txt": "renamed",
		".gitignore": "*.tmp\n", "dir/inner.txt": "inner",
	})
	commitAll(t, w.ws, "first")
	if got := w.changes(nil); len(got) != 0 {
		t.Fatalf("a clean repository has changes %v", got)
	}

	writeFiles(t, w.ws, map[string]string{"mod.txt": "after", "staged.txt": "new", "untracked.txt": "u",
		"scratch.tmp": "ignored", "dir/new.txt": "n"})
	os.Remove(filepath.Join(w.ws, "del.txt"))
	gitIn(t, w.ws, "mv", "old name.txt", "new name.txt")
	gitIn(t, w.ws, "add", "staged.txt")
	want := []string{"DELETED del.txt", "ADDED dir/new.txt", "UPDATED mod.txt", "ADDED new name.txt",
		"DELETED old name.txt", "ADDED staged.txt", "ADDED untracked.txt"}
	if got := w.changes(nil); !slices.Equal(got, want) {
		t.Errorf("changes %v\nwant    %v", got, want)
	}
	if got := w.changes(url.Values{"path": {w.ws}, "ref": {"HEAD"}}); !slices.Equal(got, want) {
		t.Errorf("changes against HEAD %v", got)
	}
	if got := w.changes(url.Values{"path": {"dir"}}); !slices.Equal(got, []string{"ADDED new.txt"}) {
		t.Errorf("changes of a subdirectory %v, want its own, relative to it", got)
	}

	// Everything committed: against the first commit, the same files changed.
	commitAll(t, w.ws, "second")
	first := gitIn(t, w.ws, "rev-list", "--max-parents=0", "HEAD")
	want = []string{"DELETED del.txt", "ADDED dir/new.txt", "UPDATED mod.txt", "ADDED new name.txt",
		"DELETED old name.txt", "ADDED staged.txt", "ADDED untracked.txt"}
	if got := w.changes(url.Values{"ref": {first}}); !slices.Equal(got, want) {
		t.Errorf("changes against the first commit %v", got)
	}
	if got := w.changes(nil); len(got) != 0 {
		t.Errorf("changes against HEAD after committing: %v", got)
	}

	for _, tc := range []struct{ ref, detail string }{
		{"no-such-branch", `The ref "no-such-branch" names no commit of the repository`},
		{"--output=/tmp/x", "The ref must not start with '-'"},
	} {
		a := w.get("/api/git/changes", url.Values{"ref": {tc.ref}})
		if a.status != http.StatusBadRequest || a.detail() != tc.detail {
			t.Errorf("ref %q: %d %s, want 400 %q", tc.ref, a.status, a.body, tc.detail)
		}
	}
}

// TestGitChangesAgainstOrigin: in a clone, the agent's work since origin, committed or not,
// and a branch pushed as it is still shows its work since the fork.
func TestGitChangesAgainstOrigin(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	upstream := t.TempDir()
	gitIn(t, upstream, "init", "-q")
	writeFiles(t, upstream, map[string]string{"app.py": "v1", "lib.py": "lib"})
	commitAll(t, upstream, "upstream")
	repo := filepath.Join(w.ws, "repo")
	gitIn(t, w.ws, "clone", "-q", upstream, repo)

	writeFiles(t, repo, map[string]string{"app.py": "v2"})
	commitAll(t, repo, "agent commit, not pushed")
	writeFiles(t, repo, map[string]string{"notes.md": "untracked"})
	// The workspace itself is no repository: its clone is found one level down.
	if got := w.changes(nil); !slices.Equal(got, []string{"UPDATED repo/app.py", "ADDED repo/notes.md"}) {
		t.Errorf("changes of the workspace %v", got)
	}
	if got := w.changes(url.Values{"path": {"repo"}}); !slices.Equal(got, []string{"UPDATED app.py", "ADDED notes.md"}) {
		t.Errorf("changes of the clone %v", got)
	}

	// A branch pushed as it is: compared with its fork point from origin's default branch.
	gitIn(t, repo, "checkout", "-q", "-b", "feature")
	writeFiles(t, repo, map[string]string{"feature.py": "f"})
	os.Remove(filepath.Join(repo, "notes.md"))
	commitAll(t, repo, "feature")
	gitIn(t, repo, "push", "-q", "-u", "origin", "feature")
	if got := w.changes(url.Values{"path": {"repo"}}); !slices.Equal(got, []string{"UPDATED app.py", "ADDED feature.py"}) {
		t.Errorf("changes of a pushed branch %v", got)
	}
	// A change on top of the pushed branch: only that change, against its upstream.
	writeFiles(t, repo, map[string]string{"lib.py": "lib v2"})
	if got := w.changes(url.Values{"path": {"repo"}}); !slices.Equal(got, []string{"UPDATED lib.py"}) {
		t.Errorf("changes on top of a pushed branch %v", got)
	}
}

func TestGitChangesWithoutRepository(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	writeFiles(t, w.ws, map[string]string{"a.txt": "a"})
	if got := w.changes(nil); len(got) != 0 {
		t.Errorf("a workspace without a repository has changes %v", got)
	}
	if a := w.get("/api/git/changes", url.Values{"path": {"a.txt"}}); a.status != http.StatusBadRequest {
		t.Errorf("changes of a file: %d %s", a.status, a.body)
	}
	if a := w.get("/api/git/changes", url.Values{"path": {"nowhere"}}); a.status != http.StatusNotFound {
		t.Errorf("changes of a missing directory: %d %s", a.status, a.body)
	}

	// A fresh repository: its files are added, staged or not.
	gitIn(t, w.ws, "init", "-q")
	writeFiles(t, w.ws, map[string]string{"b.txt": "b"})
	gitIn(t, w.ws, "add", "b.txt")
	if got := w.changes(nil); !slices.Equal(got, []string{"ADDED a.txt", "ADDED b.txt"}) {
		t.Errorf("changes of a fresh repository %v", got)
	}
	if got := w.changes(url.Values{"ref": {"HEAD"}}); !slices.Equal(got, []string{"ADDED a.txt", "ADDED b.txt"}) {
		t.Errorf("changes of a fresh repository against HEAD %v", got)
	}
}

func TestGitDiff(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	writeFiles(t, w.ws, map[string]string{"loose.txt": "not in a repo"})
	repo := filepath.Join(w.ws, "repo")
	writeFiles(t, repo, map[string]string{"mod.txt": "line 1\nline 2\n", "del.txt": "deleted text\n", "bin.dat": "\xff\xfe\x00"})
	gitIn(t, repo, "init", "-q")
	commitAll(t, repo, "first")
	writeFiles(t, repo, map[string]string{"mod.txt": "line 1\nline two\n", "new.txt": "brand new\n", "big.txt": strings.Repeat("x", runtimeclient.MaxDiffFileBytes+1)})
	os.Remove(filepath.Join(repo, "del.txt"))

	for _, tc := range []struct{ path, modified, original string }{
		{"repo/mod.txt", "line 1\nline two\n", "line 1\nline 2\n"},
		{filepath.Join(repo, "mod.txt"), "line 1\nline two\n", "line 1\nline 2\n"},
		{"repo/del.txt", "", "deleted text\n"},
		{"repo/new.txt", "brand new\n", ""},
		{"repo/bin.dat", "", ""},
		{"loose.txt", "<nil>", "<nil>"},
	} {
		d, a := w.diff(tc.path, nil)
		if a.status != http.StatusOK || str(d.Modified) != tc.modified || str(d.Original) != tc.original {
			t.Errorf("diff %s: %d %s, want modified %q and original %q", tc.path, a.status, a.body, tc.modified, tc.original)
		}
	}
	if d, _ := w.diff("repo/mod.txt", url.Values{"ref": {"HEAD"}}); str(d.Original) != "line 1\nline 2\n" {
		t.Errorf("diff against HEAD: %+v", d)
	}

	for _, tc := range []struct {
		path   string
		status int
		detail string
	}{
		{"repo/never.txt", http.StatusNotFound, "No such file, here or at the base: " + filepath.Join(repo, "never.txt")},
		{"loose-missing.txt", http.StatusNotFound, "No such file, here or at the base: " + filepath.Join(w.ws, "loose-missing.txt")},
		{"repo", http.StatusBadRequest, "Is a directory: " + repo},
		{"repo/big.txt", http.StatusBadRequest, "The file is too large for a diff (over 1048576 bytes): " + filepath.Join(repo, "big.txt")},
	} {
		if _, a := w.diff(tc.path, nil); a.status != tc.status || a.detail() != tc.detail {
			t.Errorf("diff %s: %d %s, want %d %q", tc.path, a.status, a.body, tc.status, tc.detail)
		}
	}
	if _, a := w.diff("repo/mod.txt", url.Values{"ref": {"nope"}}); a.status != http.StatusBadRequest {
		t.Errorf("diff against a ref that is not there: %d %s", a.status, a.body)
	}
}

// TestGitLeavesRepositoryAlone: reading changes takes no lock and writes nothing into the
// repository, so that it never gets in the way of the agent's own git commands.
func TestGitLeavesRepositoryAlone(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	upstream := t.TempDir()
	gitIn(t, upstream, "init", "-q")
	writeFiles(t, upstream, map[string]string{"a.txt": "a"})
	commitAll(t, upstream, "first")
	gitIn(t, w.ws, "clone", "-q", upstream, ".")
	// The same content written again: only its stat data differs from the index's, which a
	// git status would refresh and write back when allowed to.
	writeFiles(t, w.ws, map[string]string{"a.txt": "a"})
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(w.ws, "a.txt"), future, future)
	index := filepath.Join(w.ws, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.changes(nil); len(got) != 0 {
		t.Errorf("changes %v, want none", got)
	}
	w.diff("a.txt", nil)
	after, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("reading the changes rewrote the index")
	}
}

// TestGitStaysInWorkspace: a repository above the workspace (a data directory inside a
// checkout) is none of the workspace's business.
func TestGitStaysInWorkspace(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	parent := filepath.Dir(w.ws)
	gitIn(t, parent, "init", "-q")
	writeFiles(t, w.ws, map[string]string{"a.txt": "a"})
	if got := w.changes(nil); len(got) != 0 {
		t.Errorf("changes %v: the repository above the workspace was used", got)
	}
	if d, a := w.diff("a.txt", nil); a.status != http.StatusOK || d.Modified != nil || d.Original != nil {
		t.Errorf("diff %d %s: want nulls, as for a file in no repository", a.status, a.body)
	}
}

// TestGitChangesRacyClean: a change of the same size made in the instant the index was
// written is still seen. git trusts an entry's stat data only when the file is older than the
// index; the index's copy keeps the index's time, so git checks such entries' content as it
// would with the index itself.
func TestGitChangesRacyClean(t *testing.T) {
	needGit(t)
	w := newWorkspaceServer(t, 0)
	gitIn(t, w.ws, "init", "-q")
	gitIn(t, w.ws, "config", "core.trustctime", "false") // the change time cannot be set
	writeFiles(t, w.ws, map[string]string{"a.txt": "aaaa"})
	file := filepath.Join(w.ws, "a.txt")
	// Older than the commit's index, so that the index records its stat data as they are.
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(file, then, then); err != nil {
		t.Fatal(err)
	}
	commitAll(t, w.ws, "first")
	// The change, then both the file and the index at the same instant: racily clean.
	writeFiles(t, w.ws, map[string]string{"a.txt": "bbbb"})
	for _, p := range []string{file, filepath.Join(w.ws, ".git", "index")} {
		if err := os.Chtimes(p, then, then); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.changes(nil); !slices.Equal(got, []string{"UPDATED a.txt"}) {
		t.Errorf("changes %v, want the same-size change made as the index was written", got)
	}
}
