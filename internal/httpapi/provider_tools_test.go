package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// call returns a scripted step that calls a tool with arguments.
func call(name string, args map[string]any) llmtest.Step {
	b, _ := json.Marshal(args)
	return llmtest.Calls(llm.ToolCall{Name: name, Arguments: string(b)})
}

// providerObservation is an ObservationEvent's observation as the provider tools write it.
type providerObservation struct {
	Kind    string `json:"kind"`
	Number  int    `json:"number"`
	IsError bool   `json:"is_error"`
}

// providerCalls returns, in order, the tool name, error flag and text of every observation or
// agent error of the conversation.
func providerCalls(evs []wireEvent) []string {
	var out []string
	for _, ev := range evs {
		switch ev.Kind {
		case "ObservationEvent":
			var o providerObservation
			json.Unmarshal(ev.Observation, &o)
			out = append(out, fmt.Sprintf("%s error=%v %s", ev.ToolName, o.IsError, observationText(ev)))
		case "AgentErrorEvent":
			out = append(out, fmt.Sprintf("%s agent-error %s", ev.ToolName, ev.Error))
		}
	}
	return out
}

// TestProviderToolsAgent runs, for each provider, a conversation on a private repository in
// which the agent (a scripted model) reads an issue and a pull (merge) request, is refused
// another repository, and opens a pull (merge) request; the number is on the conversation in
// both API generations, and the token is nowhere to be read.
func TestProviderToolsAgent(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		provider, read, create, request string
	}{
		{"github", "read_pull_request", "create_pull_request", "Pull request #"},
		{"gitlab", "read_merge_request", "create_merge_request", "Merge request !"},
		{"bitbucket", "read_pull_request", "create_pull_request", "Pull request #"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			e := e.in(t)
			_, key := e.newUser("tools-" + tc.provider)
			login := "octo-" + tc.provider
			token := e.storeToken(key, tc.provider, login)
			srv := e.providers[tc.provider]
			repo := "team/app-" + tc.provider
			srv.AddRepo(providertest.Repo{FullName: repo, Private: true, Members: []string{login}, Branches: []string{"agent-fix"}})
			issue := srv.AddIssue(providertest.Issue{Repo: repo, Title: "Crash on empty config", Body: "Start it with an empty config: it panics.",
				Author: "someone", Comments: []providertest.Comment{{Author: "someone", Body: "Seen on 1.2 too."}}})
			pull := srv.AddPullRequest(providertest.PullRequest{Repo: repo, Title: "Half a fix", Author: login, Head: "half", Base: "main",
				Checks: []providertest.Check{{Name: "lint", State: "failure"}}})

			var offered []string
			llmSrv := e.scripted(key,
				llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
					for _, s := range req.Tools {
						offered = append(offered, s.Name)
					}
					return call("read_issue", map[string]any{"number": issue})
				}},
				call(tc.read, map[string]any{"number": pull}),
				call("read_issue", map[string]any{"number": 1, "repository": "team/other"}),
				call(tc.create, map[string]any{"title": "Fix the crash on an empty config", "body": fmt.Sprintf("Closes #%d", issue), "head": "agent-fix"}),
				llmtest.Text("Opened it."),
			)
			c := e.startAgent(key, map[string]any{"selected_repository": repo, "git_provider": tc.provider,
				"initial_message": message("Fix the crash of issue "+fmt.Sprint(issue), true)})
			if got := c.waitStatus("finished", "error", "stuck"); got != "finished" {
				t.Fatalf("the agent ended %s; events %v", got, labels(c.events()))
			}
			for _, name := range []string{"read_issue", tc.read, tc.create} {
				if !slices.Contains(offered, name) {
					t.Errorf("the model was offered %v, without %s", offered, name)
				}
			}
			if llmSrv.Remaining() != 0 {
				t.Errorf("%d scripted steps left", llmSrv.Remaining())
			}

			created := srv.Created()
			if len(created) != 1 || created[0].Head != "agent-fix" || created[0].Base != "main" || created[0].Author != login {
				t.Fatalf("opened at the provider: %+v; want agent-fix into main by %s", created, login)
			}
			number := created[0].Number
			calls := providerCalls(c.events())
			want := []struct{ prefix, holds string }{
				{"read_issue error=false", "Start it with an empty config: it panics."},
				{tc.read + " error=false", tc.request},
				{"read_issue error=true", "works on the repository " + repo + " only"},
				{tc.create + " error=false", "Opened"},
			}
			if len(calls) != len(want) {
				t.Fatalf("tool results:\n%s", strings.Join(calls, "\n"))
			}
			for i, w := range want {
				if !strings.HasPrefix(calls[i], w.prefix) || !strings.Contains(calls[i], w.holds) {
					t.Errorf("result %d: %q, want %q holding %q", i, calls[i], w.prefix, w.holds)
				}
			}

			if got := e.getConversation(key, c.id).PRNumber; !slices.Equal(got, []int{number}) {
				t.Errorf("V1 pr_number %v, want [%d]", got, number)
			}
			if got := e.v0Get(key, c.id).PRNumber; !slices.Equal(got, []int{number}) {
				t.Errorf("V0 pr_number %v, want [%d]", got, number)
			}
			e.scanForToken(key, c, token)
		})
	}
}

// TestProviderToolsProviderDown: a provider that fails answers the tool call with an error the
// model reads, and the conversation goes on.
func TestProviderToolsProviderDown(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("down")
	token := e.token(key, "github")
	srv := e.providers["github"]
	srv.AddRepo(providertest.Repo{FullName: "team/down", Branches: []string{"fix"}})
	pull := srv.AddPullRequest(providertest.PullRequest{Repo: "team/down", Title: "A change", Head: "other", Base: "main"})
	t.Cleanup(func() { srv.Fail(0) })

	var seen string
	e.scripted(key,
		llmtest.Step{Func: func(llmtest.RecordedRequest) llmtest.Step {
			srv.Fail(http.StatusServiceUnavailable)
			return call("read_pull_request", map[string]any{"number": pull})
		}},
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			seen = lastToolResult(req)
			srv.Fail(0)
			return call("create_pull_request", map[string]any{"title": "The fix", "head": "fix"})
		}},
		llmtest.Text("Done."),
	)
	c := e.startAgent(key, map[string]any{"selected_repository": "team/down", "git_provider": "github",
		"initial_message": message("Look at the pull request, then open one from fix.", true)})
	if got := c.waitStatus("finished", "error", "stuck"); got != "finished" {
		t.Fatalf("the agent ended %s; events %v", got, labels(c.events()))
	}
	if !strings.Contains(seen, "Could not read pull request") || !strings.Contains(seen, "503") {
		t.Errorf("the model read %q after the provider failed", seen)
	}
	calls := providerCalls(c.events())
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "read_pull_request error=true") || !strings.HasPrefix(calls[1], "create_pull_request error=false") {
		t.Fatalf("tool results:\n%s", strings.Join(calls, "\n"))
	}
	for _, ev := range c.events() {
		if ev.Kind == "ConversationErrorEvent" {
			t.Errorf("the conversation failed: %s %s", ev.Code, ev.Detail)
		}
	}
	created := srv.Created()
	if len(created) != 1 {
		t.Fatalf("opened %+v", created)
	}
	if got := e.getConversation(key, c.id).PRNumber; !slices.Equal(got, []int{created[0].Number}) {
		t.Errorf("pr_number %v, want [%d]", got, created[0].Number)
	}
	e.scanForToken(key, c, token)
}

// TestProviderToolsWithoutToken: a conversation whose repository's provider the user has no
// token for gets no provider tools; one without a repository neither.
func TestProviderToolsWithoutToken(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("plain")
	var offered []string
	e.scripted(key, llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		for _, s := range req.Tools {
			offered = append(offered, s.Name)
		}
		return llmtest.Text("Hello.")
	}})
	c := e.startAgent(key, map[string]any{"initial_message": message("Hi", true)})
	c.waitStatus("finished")
	for _, name := range offered {
		if strings.Contains(name, "issue") || strings.Contains(name, "request") {
			t.Errorf("a conversation without a repository offers %s", name)
		}
	}
}

// scanForToken fails if the token can be read anywhere a user, the model or an operator
// looks: the conversation's events (where the masking would show it was there), the API's
// answers about the conversation, the server's log, and every file under the data
// directory (the store, the sandboxes' files and logs).
func (e *env) scanForToken(key string, c *agentConv, token string) {
	e.t.Helper()
	var texts []string
	page := ""
	for {
		b := c.api("GET", "/events/search?limit=100&page_id="+url.QueryEscape(page), nil, http.StatusOK, nil)
		texts = append(texts, string(b))
		var p struct {
			NextPageID *string `json:"next_page_id"`
		}
		json.Unmarshal(b, &p)
		if p.NextPageID == nil {
			break
		}
		page = *p.NextPageID
	}
	events := strings.Join(texts, "\n")
	if strings.Contains(events, "<secret-hidden>") {
		e.t.Errorf("an event held a secret, masked before it was stored: %s", events)
	}
	for _, path := range []string{
		"/api/conversations/" + c.id, "/api/conversations", "/api/v1/app-conversations?ids=" + c.id,
		"/api/v1/app-conversations/search", "/api/v1/app-conversations/start-tasks/search",
		"/api/v1/events/search?limit=100", "/api/settings", "/api/user/info",
	} {
		_, b := e.call("GET", path, key, nil)
		texts = append(texts, path+": "+string(b))
	}
	texts = append(texts, "conversation API: "+string(c.api("GET", "", nil, http.StatusOK, nil)), "log: "+e.logs.String())
	for _, s := range texts {
		if strings.Contains(s, token) {
			e.t.Errorf("the token is in %.300s", s)
		}
	}
	err := filepath.WalkDir(e.cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // a sandbox may remove its files meanwhile; sockets are not files
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), token) {
			e.t.Errorf("the token is in the file %s", path)
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}
