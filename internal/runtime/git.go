package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// gitTimeout bounds each git command of the workspace routes, as OpenHands bounds its own.
const gitTimeout = 30 * time.Second

// maxGitOutput bounds what one git command may print; a list of changes longer than this is
// not one a client can show.
const maxGitOutput = 64 << 20

// errNoGit: git is not installed in the sandbox.
var errNoGit = &fileError{status: http.StatusNotImplemented, detail: "git is not installed in this sandbox"}

// gitCmd runs git commands in one repository, read-only as far as the repository's state goes.
type gitCmd struct {
	s   *Server
	dir string // where git runs, as the runtime sees it
	// index, when set, is a copy of the repository's index for git to use (see
	// withIndexCopy).
	index string
}

// git returns a runner for a directory of the workspace.
func (s *Server) git(dir string) gitCmd { return gitCmd{s: s, dir: dir} }

// env is the runtime's environment for git, with the session key already left out (s.env),
// plus what keeps git from prompting, from taking the index lock for a mere status (the agent
// may be committing meanwhile), and from looking for a repository above the workspace.
func (g gitCmd) env() []string {
	ws, real := g.s.workspaceRoots()
	env := append([]string{}, g.s.env...)
	if g.index != "" {
		env = append(env, "GIT_INDEX_FILE="+g.index)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"LC_ALL=C",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(ws)+":"+filepath.Dir(real),
	)
}

// run runs git with args and returns its standard output. A git that fails is a *gitError
// holding what it printed on standard error.
func (g gitCmd) run(ctx context.Context, args ...string) ([]byte, error) {
	return g.runInput(ctx, nil, args...)
}

func (g gitCmd) runInput(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	// The repository belongs to the agent, whose user git runs as; its configuration may
	// name programs (an fsmonitor, external diff drivers), which the reads here have no use
	// for.
	full := append([]string{"-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
		"-c", "safe.directory=*", "--no-pager"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = g.dir
	cmd.Env = g.env()
	cmd.Stdin = stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: g.s.cfg.Credential}
	var stdout, stderr cappedBuffer
	stdout.limit, stderr.limit = maxGitOutput, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, errNoGit
	}
	if stdout.truncated {
		return nil, fmt.Errorf("git %s: more than %d bytes of output", args[0], maxGitOutput)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		msg, _ := stderr.result()
		return nil, &gitError{args: args, stderr: strings.TrimSpace(msg), err: err}
	}
	return stdout.buf, nil
}

// gitError is a git command that failed.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

// line runs git and returns the first line of its output, trimmed.
func (g gitCmd) line(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, args...)
	if err != nil {
		return "", err
	}
	first, _, _ := bytes.Cut(out, []byte("\n"))
	return strings.TrimSpace(string(first)), nil
}

// tryLine is line for a question whose failure means "no": a ref that does not resolve, no
// merge base. Only git's absence and the runtime's own failures are errors.
func (g gitCmd) tryLine(ctx context.Context, args ...string) (string, error) {
	s, err := g.line(ctx, args...)
	var ge *gitError
	if errors.As(err, &ge) {
		return "", nil
	}
	return s, err
}

// withIndexCopy returns a runner that uses a copy of the repository's index, and a function
// that removes the copy. git diff writes the index back when it finds files whose content is
// unchanged but whose stat data is not, taking the index's lock meanwhile (and
// GIT_OPTIONAL_LOCKS does not stop it); an agent committing at that moment would fail. With a
// copy, reading changes never touches the repository.
func (g gitCmd) withIndexCopy(ctx context.Context) (gitCmd, func(), error) {
	name, err := g.line(ctx, "rev-parse", "--git-path", "index")
	if err != nil {
		return g, nil, err
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(g.dir, name)
	}
	tmp, err := os.MkdirTemp("", "agentd-git-index-")
	if err != nil {
		return g, nil, fmt.Errorf("copy the git index: %w", err)
	}
	done := func() { os.RemoveAll(tmp) }
	g.index = filepath.Join(tmp, "index")
	if err := copyFile(name, g.index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		done()
		return g, nil, fmt.Errorf("copy the git index: %w", err)
	}
	return g, done, nil
}

// copyFile copies a file with its modification time: git trusts an index entry's stat data
// only when the file is older than the index, and a copy that looked newer would hide a
// change made in the same instant as the original index was written.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chtimes(to, fi.ModTime(), fi.ModTime())
}
