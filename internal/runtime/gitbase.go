package runtime

import (
	"context"
	"errors"
	"strings"
)

// base picks the commit a repository's changes are shown against. With ref, it is that
// commit (a ref that names none is the client's mistake; HEAD without commits stands for the
// empty tree, so that a fresh repository shows its files as added). Without, it is what best
// shows what was done here, the way OpenHands picks it for display:
//
//  1. the current branch's upstream, origin/<branch>, unless it is HEAD itself with no
//     tracked change: a branch pushed as it is would then show nothing, where its work since
//     the fork is what a reader wants;
//  2. the fork point from origin's default branch (origin/HEAD, else origin/main or
//     origin/master), else that branch's tip;
//  3. without such a branch, the fork point from a local main or master when HEAD descends
//     from it and is not on it;
//  4. HEAD, as git status shows changes; and the empty tree for a repository without
//     commits.
//
// OpenHands also asks the remote for its default branch (git remote show origin); agentd makes
// no network call for a read.
func (g gitCmd) base(ctx context.Context, ref string) (string, error) {
	if ref != "" {
		return g.explicitBase(ctx, ref)
	}
	if commit, err := g.tryLine(ctx, "rev-list", "-n", "1", "--all"); err != nil {
		return "", err
	} else if commit == "" {
		return g.emptyTree(ctx)
	}
	head, err := g.resolveCommit(ctx, "HEAD")
	if err != nil {
		return "", err
	}
	branch, err := g.tryLine(ctx, "symbolic-ref", "--short", "-q", "HEAD")
	if err != nil {
		return "", err
	}
	if branch != "" {
		up, err := g.resolveCommit(ctx, "refs/remotes/origin/"+branch)
		if err != nil {
			return "", err
		}
		if up != "" && (up != head || g.dirty(ctx)) {
			return up, nil
		}
	}
	def, err := g.originDefault(ctx)
	if err != nil {
		return "", err
	}
	if def != "" {
		if mb, err := g.tryLine(ctx, "merge-base", "HEAD", def); err != nil || mb != "" {
			return mb, err
		}
		if tip, err := g.resolveCommit(ctx, def); err != nil || tip != "" {
			return tip, err
		}
	}
	for _, local := range []string{"main", "master"} {
		if def != "" {
			break // a local default counts only where origin has none
		}
		tip, err := g.resolveCommit(ctx, "refs/heads/"+local)
		if err != nil {
			return "", err
		}
		if tip == "" {
			continue
		}
		if local != branch {
			if mb, err := g.tryLine(ctx, "merge-base", "HEAD", tip); err != nil {
				return "", err
			} else if mb == tip {
				return mb, nil
			}
		}
		break
	}
	if head != "" {
		return head, nil
	}
	return g.emptyTree(ctx)
}

// explicitBase resolves a ref the client named.
func (g gitCmd) explicitBase(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", badPath("The ref must not start with '-'")
	}
	sha, err := g.resolveCommit(ctx, ref)
	switch {
	case err != nil:
		return "", err
	case sha != "":
		return sha, nil
	case ref == "HEAD":
		return g.emptyTree(ctx)
	}
	return "", badPath("The ref %q names no commit of the repository", ref)
}

// resolveCommit returns the commit a ref names, or "" when it names none.
func (g gitCmd) resolveCommit(ctx context.Context, ref string) (string, error) {
	return g.tryLine(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
}

// originDefault returns origin's default branch as a ref, or "".
func (g gitCmd) originDefault(ctx context.Context) (string, error) {
	if def, err := g.tryLine(ctx, "symbolic-ref", "-q", "refs/remotes/origin/HEAD"); err != nil || def != "" {
		return def, err
	}
	for _, name := range []string{"main", "master"} {
		ref := "refs/remotes/origin/" + name
		if sha, err := g.resolveCommit(ctx, ref); err != nil || sha != "" {
			return ref, err
		}
	}
	return "", nil
}

// dirty reports whether tracked files differ from HEAD. Untracked files do not count: they
// are listed apart, and a stray one must not hide a pushed branch's work. When git cannot
// say, the tree counts as dirty, which keeps the branch's own upstream as the base.
func (g gitCmd) dirty(ctx context.Context) bool {
	out, err := g.run(ctx, "status", "--porcelain", "--untracked-files=no")
	return err != nil || len(strings.TrimSpace(string(out))) > 0
}

// emptyTree returns the id of the empty tree in the repository's hash function.
func (g gitCmd) emptyTree(ctx context.Context) (string, error) {
	out, err := g.runInput(ctx, strings.NewReader(""), "hash-object", "-t", "tree", "--stdin")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// inWorkTree reports whether the runner's directory is in a repository's working tree.
func (g gitCmd) inWorkTree(ctx context.Context) (bool, error) {
	out, err := g.line(ctx, "rev-parse", "--is-inside-work-tree")
	var ge *gitError
	if errors.As(err, &ge) {
		return false, nil
	}
	return out == "true", err
}
