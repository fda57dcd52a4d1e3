package conversation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
)

// A conversation on a repository starts with the repository in its sandbox's workspace,
// cloned through the sandbox's git proxy (package gitproxy): the remote that git in the
// sandbox sees is a loopback URL that names no secret, and agentd adds the provider's token
// on the way upstream. The steps, each saved on the start task, are OpenHands':
// PREPARING_REPOSITORY (clone and check out the branch, commit author), RUNNING_SETUP_SCRIPT
// (.openhands/setup.sh) and SETTING_UP_GIT_HOOKS (.openhands/pre-commit.sh as the pre-commit
// hook).

// ErrNoRepositories: the server has no git providers, so no conversation can work on a
// repository.
var ErrNoRepositories = errors.New("repositories are not configured on this server: a conversation cannot work on one")

// Remotes resolves a user's repository to its upstream and the credentials agentd uses for
// it (gitprovider.Service).
type Remotes interface {
	Remote(ctx context.Context, userID, provider, repository string) (gitprovider.Remote, error)
}

// GitChannels open the sandboxes' git channels (gitproxy.Service).
type GitChannels interface {
	// Attach keeps the sandbox's channel open and returns, once it has been open, the base
	// URL of the proxy as git in the sandbox reaches it.
	Attach(ctx context.Context, ownerID, sandboxID string) (string, error)
	// Keep keeps the channel open without waiting for it.
	Keep(ownerID, sandboxID string)
}

// RepositoryOptions tune how a conversation's repository is prepared.
type RepositoryOptions struct {
	// CloneTimeout bounds the clone; SetupTimeout the setup script. Zero means ten minutes
	// (the setup script's bound in OpenHands).
	CloneTimeout time.Duration
	SetupTimeout time.Duration
	// AuthorName and AuthorEmail are the commit author when neither the user's settings
	// (git_user_name, git_user_email) nor their provider name one.
	AuthorName, AuthorEmail string
}

// RepositoryError says why a conversation's repository could not be prepared, in words for
// its owner; it becomes the start task's detail.
type RepositoryError struct{ Msg string }

func (e *RepositoryError) Error() string { return e.Msg }

// ClientMessage is the text shown to the conversation's owner.
func (e *RepositoryError) ClientMessage() string { return e.Msg }

// RepositoryRef is a repository a conversation works on.
type RepositoryRef struct {
	// Provider is the conversation's git_provider; empty when it named none.
	Provider string
	Name     string
}

// Repositories lists the repositories of the owner's conversations that use the sandbox:
// the ones git in that sandbox may reach.
func (s *Service) Repositories(ctx context.Context, ownerID, sandboxID string) ([]RepositoryRef, error) {
	var out []RepositoryRef
	q := paging.Query{Limit: paging.MaxLimit}
	for {
		vs, next, err := s.o.Store.ListConversations(ctx, ownerID, Filter{SandboxID: sandboxID, IncludeSub: true}, q)
		if err != nil {
			return nil, fmt.Errorf("repositories of sandbox %s: %w", sandboxID, err)
		}
		for _, v := range vs {
			if repo := deref(v.SelectedRepository); repo != "" {
				out = append(out, RepositoryRef{Provider: deref(v.GitProvider), Name: repo})
			}
		}
		if next == "" {
			return out, nil
		}
		q.Cursor = next
	}
}

// workspaceRepo is a conversation's repository as its start prepares it.
type workspaceRepo struct {
	remote gitprovider.Remote
	// provider and repo name the repository in the proxy's path.
	provider, repo string
	branch         string
	// dir is the clone's directory in the sandbox, name its last element.
	dir, name string
	// url is the remote as git in the sandbox sees it.
	url string
	rt  Runtime
}

// ProjectDir is where a conversation's agent works, below its sandbox's workspace, as
// OpenHands' agents do (/workspace/project), and where OpenHands' clients look for its changes:
// a git repository from the start when the conversation names no repository, the directory
// its repository is cloned into when it does.
const ProjectDir = "project"

// workspaceOf is the conversation's working directory in its sandbox, whose workspace is ws.
func workspaceOf(c Conversation, ws string) string {
	if ws == "" {
		return ""
	}
	return path.Join(ws, c.WorkDir)
}

// prepareWorkDir creates the conversation's working directory in its running sandbox sb, and makes it a git repository
// when the conversation names no repository of its own, so that the changes its agent makes
// show as such. The directory must come about; a sandbox without git only has no repository.
func (s *Service) prepareWorkDir(ctx context.Context, t *StartTask, v Conversation, sb sandbox.Sandbox) error {
	if v.WorkDir == "" {
		return nil
	}
	dir := workspaceOf(v, sb.Instance.Workspace)
	if dir == "" {
		return nil // a backend that does not say where its workspace is
	}
	rt, err := s.o.Runtimes(ctx, t.OwnerID, t.SandboxID)
	if err != nil {
		return fmt.Errorf("reach the sandbox: %w", err)
	}
	req := runtimeclient.WorkDirRequest{Dir: v.WorkDir}
	if deref(v.SelectedRepository) == "" {
		name, email := s.author(ctx, t.OwnerID, gitprovider.Remote{})
		req.Git = &runtimeclient.WorkDirGit{Name: oneLine(name), Email: oneLine(email)}
		// The repository need not be whole before the agent's first model request, only
		// before anything reads or writes the workspace: the runtime answers once the
		// directory is made and holds every such request until git init has run.
		req.GitAfterAnswer = true
	}
	// One request, since it is on the way to the agent's first step.
	res, err := rt.WorkDir(ctx, req)
	var st *runtimeclient.StatusError
	switch {
	case errors.As(err, &st) && st.StatusCode == http.StatusNotFound:
		// A sandbox started by an earlier version of agentd runs a runtime without the route.
		res, err = s.prepareWorkDirByCommand(ctx, rt, dir, req.Git)
	case errors.As(err, &st) && st.StatusCode == http.StatusConflict:
		err = &workDirError{st.Detail()}
	}
	var refused *workDirError
	switch {
	case errors.As(err, &refused):
		// What the sandbox holds is in the way (a file of that name): the user's to know.
		return &RepositoryError{Msg: "the conversation's directory " + dir + " could not be made in the sandbox: " + refused.why}
	case err != nil:
		return fmt.Errorf("prepare the working directory: %w", err)
	case res.Git == runtimeclient.WorkDirGitMissing || res.Git == runtimeclient.WorkDirGitFailed:
		s.log.Warn("the conversation's directory is no git repository: git is missing from the sandbox or failed",
			"conversation_id", v.ID, "sandbox_id", t.SandboxID, "git", res.Git, "detail", res.Detail)
	}
	return nil
}

// prepareWorkDirByCommand does what the runtime's work-dir route does, by a command: for
// runtimes from before the route.
func (s *Service) prepareWorkDirByCommand(ctx context.Context, rt Runtime, dir string, git *runtimeclient.WorkDirGit) (runtimeclient.WorkDirResult, error) {
	cmd := "mkdir -p -- " + shellQuote(dir) + " || exit 97"
	if git != nil {
		cmd += "\ncd -- " + shellQuote(dir) + " && command -v git >/dev/null && { [ -e .git ] || { git init -q && git config user.name " +
			shellQuote(git.Name) + " && git config user.email " + shellQuote(git.Email) + "; }; } || exit 98"
	}
	res, err := rt.Run(ctx, runtimeclient.CommandRequest{Command: cmd, TimeoutSeconds: 60, Env: gitEnv})
	switch {
	case err != nil:
		return runtimeclient.WorkDirResult{}, err
	case res.ExitCode == 98:
		return runtimeclient.WorkDirResult{Git: runtimeclient.WorkDirGitFailed, Detail: lastLines(res.Output, 3)}, nil
	case res.ExitCode != 0:
		return runtimeclient.WorkDirResult{}, &workDirError{lastLines(res.Output, 3)}
	}
	return runtimeclient.WorkDirResult{}, nil
}

// workDirError: the directory could not be made; why says why (the runtime's refusal, or
// what the command printed).
type workDirError struct{ why string }

func (e *workDirError) Error() string { return e.why }

// oneLine is s with its line breaks as spaces: a git configuration value is one line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == 0 }), " ")
}

// prepareRepository runs the repository steps of a start task, if the conversation names a
// repository.
func (s *Service) prepareRepository(ctx context.Context, t *StartTask, v Conversation) error {
	repo := deref(v.SelectedRepository)
	if repo == "" {
		return nil
	}
	if s.o.Remotes == nil || s.o.Git == nil {
		return &RepositoryError{Msg: ErrNoRepositories.Error()}
	}
	// A clone and a setup script may take long: the sandbox is in use meanwhile, never idle.
	release := s.o.Sandboxes.Hold(t.SandboxID)
	defer release()
	t.Status, t.Detail = TaskPreparingRepository, "Cloning "+repo
	if err := s.saveTask(ctx, t); err != nil {
		return err
	}
	w, err := s.resolveRepository(ctx, t, v, repo, deref(v.GitProvider), deref(v.SelectedBranch))
	if err != nil {
		return err
	}
	if err := s.clone(ctx, t, w); err != nil {
		return err
	}
	if err := s.configureClone(ctx, t.OwnerID, w); err != nil {
		return err
	}
	scripts, err := w.scripts(ctx)
	if err != nil {
		return err
	}

	t.Status, t.Detail = TaskRunningSetupScript, ""
	if err := s.saveTask(ctx, t); err != nil {
		return err
	}
	if scripts.setup {
		if err := s.runSetupScript(ctx, v, w); err != nil {
			return err
		}
	}

	t.Status = TaskSettingUpGitHooks
	if err := s.saveTask(ctx, t); err != nil {
		return err
	}
	if scripts.preCommit {
		return w.installPreCommitHook(ctx)
	}
	return nil
}

// resolveRepository finds the repository upstream, opens the sandbox's git channel and
// decides where the clone goes.
func (s *Service) resolveRepository(ctx context.Context, t *StartTask, v Conversation, repo, provider, branch string) (*workspaceRepo, error) {
	name := path.Base(repo)
	if !validRepoName(repo) {
		return nil, &RepositoryError{Msg: fmt.Sprintf("%q is not a repository name (owner/name)", repo)}
	}
	remote, err := s.o.Remotes.Remote(ctx, t.OwnerID, provider, repo)
	if err != nil {
		var cm interface{ ClientMessage() string }
		if errors.As(err, &cm) {
			return nil, &RepositoryError{Msg: cm.ClientMessage()}
		}
		return nil, fmt.Errorf("remote of %s: %w", repo, err)
	}
	attachCtx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()
	base, err := s.o.Git.Attach(attachCtx, t.OwnerID, t.SandboxID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log.Warn("git channel", "sandbox_id", t.SandboxID, "err", err)
		return nil, &RepositoryError{Msg: "the sandbox's git relay could not be reached; the server log has the cause"}
	}
	sb, err := s.o.Sandboxes.Get(ctx, t.OwnerID, t.SandboxID)
	if err != nil {
		return nil, fmt.Errorf("get sandbox: %w", err)
	}
	rt, err := s.o.Runtimes(ctx, t.OwnerID, t.SandboxID)
	if err != nil {
		return nil, fmt.Errorf("reach the sandbox: %w", err)
	}
	// The path names the repository as the conversation does, which is what the proxy
	// matches it against; the provider the conversation names, else the one that has it.
	if provider == "" {
		provider = remote.Provider
	}
	return &workspaceRepo{
		remote: remote, branch: branch, name: name, rt: rt, provider: provider, repo: repo,
		dir: path.Join(workspaceOf(v, sb.Instance.Workspace), name),
		url: strings.TrimRight(base, "/") + "/" + provider + "/" + repo + ".git",
	}, nil
}

// validRepoName accepts owner/name with groups before the name, and no empty, dot or
// dot-dot segment or control character.
func validRepoName(repo string) bool {
	segs := strings.Split(repo, "/")
	if len(segs) < 2 || strings.ContainsFunc(repo, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// configureClone points the clone's origin at the proxy (again: the port is the runtime's)
// and sets the commit author in its config.
func (s *Service) configureClone(ctx context.Context, ownerID string, w *workspaceRepo) error {
	name, email := s.author(ctx, ownerID, w.remote)
	cmd := "git remote set-url origin " + shellQuote(w.url) +
		" && git config user.name " + shellQuote(name) + " && git config user.email " + shellQuote(email)
	res, err := w.run(ctx, cmd, time.Minute)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return &RepositoryError{Msg: "configuring the clone of " + w.repo + " failed: " + lastLines(res.Output, 3)}
	}
	return nil
}

// author is the commit author of the user's conversations: their settings', else their
// provider login's, else the server's.
func (s *Service) author(ctx context.Context, ownerID string, remote gitprovider.Remote) (name, email string) {
	name, email = remote.AuthorName, remote.AuthorEmail
	if s.o.Settings != nil {
		v, err := s.o.Settings.Get(ctx, ownerID)
		if err != nil && !errors.Is(err, settings.ErrNotFound) {
			s.log.Warn("git author: read settings", "user_id", ownerID, "err", err)
		}
		if n := strings.TrimSpace(deref(v.GitUserName)); n != "" {
			name = n
		}
		if e := strings.TrimSpace(deref(v.GitUserEmail)); e != "" {
			email = e
		}
	}
	if name == "" {
		name = s.o.Repository.AuthorName
	}
	if email == "" {
		email = s.o.Repository.AuthorEmail
	}
	return name, email
}

// run runs a command in the clone's directory.
func (w *workspaceRepo) run(ctx context.Context, cmd string, timeout time.Duration) (runtimeclient.CommandResult, error) {
	res, err := w.rt.Run(ctx, runtimeclient.CommandRequest{Command: "cd -- " + shellQuote(w.dir) + " && " + cmd,
		TimeoutSeconds: timeoutSeconds(timeout), Env: gitEnv})
	if err != nil {
		return runtimeclient.CommandResult{}, fmt.Errorf("in %s: %w", w.repo, err)
	}
	return res, nil
}

// gitEnv keeps git from asking for a password (the sandbox has none to give) and makes its
// messages the ones this package reads.
var gitEnv = map[string]string{"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

// repoScripts says which of the repository's OpenHands scripts exist.
type repoScripts struct{ setup, preCommit bool }

func (w *workspaceRepo) scripts(ctx context.Context) (repoScripts, error) {
	res, err := w.run(ctx, `for f in setup.sh pre-commit.sh; do [ -f ".openhands/$f" ] && echo "$f"; done; true`, time.Minute)
	if err != nil {
		return repoScripts{}, err
	}
	var sc repoScripts
	for _, l := range strings.Fields(res.Output) {
		sc.setup = sc.setup || l == "setup.sh"
		sc.preCommit = sc.preCommit || l == "pre-commit.sh"
	}
	return sc, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// timeoutSeconds converts d for a runtime command, within the runtime's bounds.
func timeoutSeconds(d time.Duration) int {
	return min(max(int((d+time.Second-1)/time.Second), 1), runtimeclient.MaxCommandTimeoutSeconds)
}

// lastLines returns the last n non-empty lines of out, joined by "; ".
func lastLines(out string, n int) string {
	var lines []string
	for l := range strings.FieldsFuncSeq(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(len(lines)-n, 0):], "; ")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
