package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
)

// The repository figure: a conversation on a repository, from its creation to READY (a
// sandbox started, the repository cloned through the sandbox's git proxy, its branch checked
// out, the author set, its scripts looked for), beside a plain `git clone` of the same
// repository on the host, from the same loopback git server, in the same run.

// benchRepo is the repository of the figure, on the bench's git server.
const benchRepo = "bench/many-files"

// benchGitToken is the token the bench's git server demands.
const benchGitToken = "bench-git-token-0123456789"

// startGit starts the bench's git server under dir with a repository of n files of a
// kilobyte each (text, in directories of a hundred, as a source tree is).
func startGit(dir string, n int) (*gittest.Server, error) {
	srv, err := gittest.New(dir, benchGitToken)
	if err != nil {
		return nil, err
	}
	files := make(map[string]string, n)
	line := "the quick brown fox jumps over the lazy dog, line "
	for i := range n {
		var b []byte
		for j := range 20 {
			b = fmt.Appendf(b, "%s%d of file %d\n", line, j, i)
		}
		files[fmt.Sprintf("src/pkg%03d/file%05d.txt", i/100, i)] = string(b)
	}
	if err := srv.Create(benchRepo, gittest.Commit{Files: files, Message: "a few thousand files"}); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// cleanups closes what a provider double opened, as a test would at its end.
type cleanups []func()

func (c *cleanups) Cleanup(f func()) { *c = append(*c, f) }

// startGitHub starts a GitHub API on loopback that knows the bench's user (by its token) and
// its repository on git, as github.com knows a user's private repository: agentd checks the
// token there, and resolves the repository there to its clone URL and the credentials git
// needs, as for any user. The returned func stops it.
func startGitHub(git *gittest.Server) (*providertest.Server, func()) {
	var c cleanups
	gh := providertest.NewGitHub(&c)
	gh.AddUser(benchGitToken, providertest.User{ID: 1, Login: "bench", Name: "Bench", Email: "bench@example.com"})
	gh.AddRepo(providertest.Repo{FullName: benchRepo, Private: true, Members: []string{"bench"},
		CloneURL: git.URL() + "/" + benchRepo + ".git"})
	return gh, func() {
		for i := len(c) - 1; i >= 0; i-- {
			c[i]()
		}
	}
}

// storeGitHubToken stores the bench user's GitHub token, which agentd checks with the API.
func (s *server) storeGitHubToken(ctx context.Context) error {
	return s.call(ctx, "POST", "/api/add-git-providers",
		map[string]any{"provider_tokens": map[string]any{"github": map[string]any{"token": benchGitToken}}}, nil)
}

// benchRepository times n conversations on benchRepo from creation to READY, each beside a
// `git clone` of it on the host. Each conversation is deleted (with its sandbox) outside the
// timed part.
func benchRepository(ctx context.Context, s *server, git *gittest.Server, files, n int, tmp string) ([]row, []string, error) {
	var creates, clones []time.Duration
	for i := range warmups + n {
		clone, err := timeClone(ctx, git, filepath.Join(tmp, fmt.Sprintf("clone-%d", i)))
		if err != nil {
			return nil, nil, err
		}
		create, err := s.timeRepositoryConversation(ctx)
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			creates = append(creates, create)
			clones = append(clones, clone)
		}
	}
	what := fmt.Sprintf("conversation on a repository of %d files, creation to READY", files)
	const base = "`git clone` of it on the host"
	rows := []row{
		timeRow(what+", p50", 50, creates, clones, base),
		timeRow(what+", p99", 99, creates, clones, base),
	}
	note := "repository: creation to READY covers the check of the repository with the provider's API (a GitHub API on loopback), " +
		"the sandbox's start (process backend), the opening of its git channel, " +
		"the clone through the proxy (git http-backend's pack streamed through agentd and the runtime's relay), the checkout " +
		"and the clone's configuration; the `git clone` beside it fetches straight from the same loopback server, " +
		"which makes the pack anew for each clone."
	return rows, []string{note}, nil
}

// timeClone clones benchRepo into dir, as a user on the host would with the token, and
// removes the clone.
func timeClone(ctx context.Context, git *gittest.Server, dir string) (time.Duration, error) {
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, "git", "-c", "http.extraHeader=Authorization: "+git.Authorization(),
		"clone", "-q", git.URL()+"/"+benchRepo+".git", dir)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("git clone: %v: %s", err, out)
	}
	return time.Since(t0), nil
}

// timeRepositoryConversation creates a conversation on benchRepo through the API and polls
// its start task until READY; it returns the time from the request until READY was seen.
func (s *server) timeRepositoryConversation(ctx context.Context) (time.Duration, error) {
	var task struct {
		ID string `json:"id"`
	}
	t0 := time.Now()
	if err := s.call(ctx, "POST", "/api/v1/app-conversations", map[string]any{"selected_repository": benchRepo, "git_provider": "github"}, &task); err != nil {
		return 0, err
	}
	var convID string
	defer func() {
		if convID != "" {
			_ = s.app.Conversations.Delete(context.WithoutCancel(ctx), s.ownerID, convID)
		}
	}()
	for {
		var got []*struct {
			Status            string  `json:"status"`
			Detail            *string `json:"detail"`
			AppConversationID *string `json:"app_conversation_id"`
		}
		if err := s.call(ctx, "GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, nil, &got); err != nil {
			return 0, err
		}
		if len(got) != 1 || got[0] == nil {
			return 0, errors.New("the start task is gone")
		}
		switch got[0].Status {
		case "READY":
			d := time.Since(t0)
			convID = *got[0].AppConversationID
			return d, nil
		case "ERROR":
			detail := ""
			if got[0].Detail != nil {
				detail = *got[0].Detail
			}
			return 0, fmt.Errorf("the conversation on %s failed to start: %s", benchRepo, detail)
		}
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
