package httpapi_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestRepositoryThroughProviders: the whole path, for GitHub, GitLab and Bitbucket, with only
// the providers standing in: the token is checked by the provider's API (a refused one is not
// stored), the private repository is resolved by the provider's API to its clone URL, and git
// in the sandbox clones the branch and pushes a new one through agentd's proxy, which adds the
// token upstream; the agent opens a pull (merge) request with agentd's provider tool and its
// number is the conversation's pr_number; the commit carries the provider login, the setup
// script ran, and the token is nowhere the sandbox or the user can see.
func TestRepositoryThroughProviders(t *testing.T) {
	for _, provider := range []string{"github", "gitlab", "bitbucket"} {
		t.Run(provider, func(t *testing.T) {
			srv := gittest.Start(t, gitToken)
			err := srv.Create("octo/private",
				gittest.Commit{Files: map[string]string{"README.md": "private\n"}},
				gittest.Commit{Branch: "dev", Files: map[string]string{
					".openhands/setup.sh": "echo \"setup ran on $(git rev-parse --abbrev-ref HEAD)\"\n"}})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnvGit(t, nil) // the users' providers resolve repositories, as in agentd serve
			_, alice := e.newUser("alice")
			p := e.providers[provider]
			p.AddUser(gitToken, providertest.User{ID: 42, Login: "octo", Name: "Octo Cat", Email: "octo@example.com"})
			tokens := func(tok string) map[string]any {
				return map[string]any{"provider_tokens": map[string]any{provider: map[string]any{"token": tok}}}
			}
			e.must("POST", "/api/add-git-providers", alice, tokens("refused-token-0123456789"), http.StatusUnauthorized, nil)
			e.must("POST", "/api/add-git-providers", alice, tokens(gitToken), http.StatusOK, nil)
			// The provider's API knows the branch the agent pushes (its double does not read the
			// git server).
			p.AddRepo(providertest.Repo{FullName: "octo/private", Private: true, Members: []string{"octo"},
				Branches: []string{"main", "dev", "agent-work"}, CloneURL: srv.URL() + "/octo/private.git"})
			create := map[string]string{"github": "create_pull_request", "gitlab": "create_merge_request", "bitbucket": "create_pull_request"}[provider]

			llmSrv := e.scripted(alice,
				callIn(t, "terminal", func(ws string) map[string]any {
					return map[string]any{"command": "cd " + ws + "/private && git checkout -q -b agent-work && echo work > work.txt" +
						" && git add . && git commit -q -m agent-work && git push -q origin agent-work 2>&1; echo pushed"}
				}),
				call(create, map[string]any{"title": "Agent work", "head": "agent-work", "base": "dev"}),
				llmtest.Calls(llmtest.Call("finish", `{"message":"pushed"}`)),
			)
			task := e.startConversation(alice, map[string]any{
				"initial_message":     message("push a branch", true),
				"selected_repository": "octo/private", "selected_branch": "dev", "git_provider": provider,
			})
			ready := e.waitTask(alice, task.ID, "READY")
			conv := e.getConversation(alice, *ready.AppConversationID)
			c := &agentConv{e: e, key: alice, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
			c.waitStatus("finished")

			// The model is told where the clone is and how its changes leave the sandbox.
			if reqs := llmSrv.Requests(); len(reqs) == 0 || !strings.Contains(reqs[0].System, "The repository octo/private is cloned at ") ||
				!strings.Contains(reqs[0].System, "/private, with the branch dev checked out") {
				t.Errorf("the system prompt does not say where the repository is")
			}
			evs := agentEvents(c.events())
			if len(evs) < 3 || !strings.Contains(observationText(evs[2]), "setup ran on dev") {
				t.Errorf("the setup script's output is not in the events: %d events", len(evs))
			}
			// The push may outlast the terminal call on a busy machine (it prints nothing for
			// the call's no-output wait), and then lands after the agent finished.
			var got string
			e.eventually("the pushed branch upstream", func() bool {
				var err error
				got, err = srv.Git("octo/private", "log", "-1", "--format=%an %s", "agent-work")
				return err == nil && got == "octo agent-work\n"
			}, func() string { return fmt.Sprintf("upstream agent-work: %q", got) })
			created := p.Created()
			if len(created) != 1 || created[0].Head != "agent-work" || created[0].Base != "dev" {
				t.Fatalf("opened at the provider: %+v; want agent-work into dev", created)
			}
			if got := e.getConversation(alice, conv.ID).PRNumber; !slices.Equal(got, []int{created[0].Number}) {
				t.Errorf("pr_number %v, want [%d]", got, created[0].Number)
			}
			for _, r := range srv.Requests() {
				if !r.Authorized {
					t.Errorf("a request reached the git server without the token: %+v", r)
				}
			}
			checkNoToken(t, e, c, filepath.Join(e.sandboxDir(conv.SandboxID), "workspace"))
		})
	}
}
