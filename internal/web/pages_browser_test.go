package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

const githubToken = "ghp_pages-test-token-0123456789abcdef"

// showcase is a short piece of work with every kind of event the page renders.
func showcase(t *testing.T) []llmtest.Step {
	plan := func(status ...string) llmtest.Step {
		titles := []string{"Read the failing test", "Fix Greet", "Run the tests again"}
		var list []map[string]string
		for i, s := range status {
			list = append(list, map[string]string{"title": titles[i], "status": s})
		}
		b, _ := json.Marshal(map[string]any{"command": "plan", "task_list": list})
		return llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("task_tracker", string(b))},
			Usage: llm.Usage{PromptTokens: 2400, CompletionTokens: 90}}}
	}
	return []llmtest.Step{
		plan("in_progress", "todo", "todo"),
		terminal(t, `printf '\033[1;34m==>\033[0m go test ./...\n\033[32mok\033[0m   example.com/hello  0.012s\n\033[31mFAIL\033[0m example.com/greet  0.004s\n    greet_test.go:9: Greet("Ada") = "Hello Ada", want "Hello, Ada!"\n'`),
		callIn(t, "file_editor", func(ws string) map[string]any {
			return map[string]any{"command": "create", "path": ws + "/greet.go",
				"file_text": "package greet\n\n// Greet says hello.\nfunc Greet(name string) string {\n\treturn \"Hello \" + name\n}\n"}
		}),
		callIn(t, "file_editor", func(ws string) map[string]any {
			return map[string]any{"command": "str_replace", "path": ws + "/greet.go",
				"old_str": "\treturn \"Hello \" + name\n", "new_str": "\treturn \"Hello, \" + name + \"!\"\n"}
		}),
		plan("done", "done", "in_progress"),
		terminal(t, `printf '\033[32mok\033[0m   example.com/hello  0.011s\n\033[32mok\033[0m   example.com/greet  0.003s\n'`),
		{Reply: &llmtest.Reply{Text: "Fixed **Greet**: it now puts a comma after *Hello* and ends with `!`.\n\n| package | result |\n|---|---|\n| hello | ok |\n| greet | ok |",
			Usage: llm.Usage{PromptTokens: 3100, CompletionTokens: 120}}},
	}
}

// TestBrowserPages opens every page at phone and desktop width, in light and dark, uses
// each settings form, and checks that no page is wider than the screen. With
// -update-screenshots it writes the screenshots of docs/screenshots/.
func TestBrowserPages(t *testing.T) {
	e := newEnv(t)
	e.github.AddUser(githubToken, providertest.User{Login: "octocat", Name: "The Octocat"})
	e.github.AddRepo(providertest.Repo{FullName: "octocat/hello-world", Branches: []string{"main", "dev"}})
	e.github.AddRepo(providertest.Repo{FullName: "octocat/greeter"})
	e.github.AddIssue(providertest.Issue{Repo: "octocat/greeter", Title: "Greet forgets the comma", Assignees: []string{"octocat"}})
	b := newBrowser(t, e)
	model := llmtest.NewOpenAI(t)

	// The sign-in page, and a wrong key.
	for _, w := range []int64{phone, desktop} {
		b.view(w, "light")
		b.open("/sign-in")
		b.screenshot(fmt.Sprintf("sign-in-%d", w))
	}
	b.view(desktop, "light")
	b.do("a wrong key", chromedp.SendKeys(chromedp.CSS("#api_key"), "not-a-key"+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#signin-error")))
	b.signIn(adminKey)

	// Settings, through their forms.
	b.open("/settings")
	b.do("the model",
		chromedp.SetValue(chromedp.CSS("#llm-model"), "gpt-4o"),
		chromedp.SendKeys(chromedp.CSS("#llm-base-url"), model.URL()),
		chromedp.SendKeys(chromedp.CSS("#llm-key"), llmtest.APIKey),
		chromedp.Click(chromedp.CSS(`[data-form="llm"] button[type="submit"]`)),
	)
	b.waitFor("the stored key", `document.querySelector("#llm-key") && document.querySelector("#llm-key").placeholder.startsWith("A key is stored")`)
	b.do("a git provider",
		chromedp.SendKeys(chromedp.CSS("#provider-token"), githubToken),
		chromedp.Click(chromedp.CSS(`[data-form="provider"] button[type="submit"]`)),
	)
	b.waitFor("the stored token", `!!document.querySelector('[data-check-provider="github"]')`)
	b.do("the provider's verdict", chromedp.Click(chromedp.CSS(`[data-check-provider="github"]`)))
	b.waitFor("the verdict", contains(textOf("#verdict-github"), "Accepted: signed in as octocat"))
	b.do("a wrong token",
		chromedp.SendKeys(chromedp.CSS("#provider-token"), "ghp_wrong-token-0123456789"),
		chromedp.Click(chromedp.CSS(`[data-form="provider"] button[type="submit"]`)),
	)
	b.waitFor("the refusal", `!document.querySelector('[data-form="provider"] .alert.error').hidden`)
	b.do("a secret",
		chromedp.SendKeys(chromedp.CSS("#secret-name"), "NPM_TOKEN"),
		chromedp.SendKeys(chromedp.CSS("#secret-description"), "publishes the package"),
		chromedp.SendKeys(chromedp.CSS("#secret-value"), "npm_0123456789abcdef"),
		chromedp.Click(chromedp.CSS(`[data-form="secret"] button[type="submit"]`)),
	)
	b.waitFor("the secret", contains(textOf("#secrets code"), "NPM_TOKEN"))
	b.do("an MCP server",
		chromedp.SendKeys(chromedp.CSS("#mcp-url"), "https://mcp.example.com/mcp"),
		chromedp.Click(chromedp.CSS(`[data-form="mcp"] button[type="submit"]`)),
	)
	b.waitFor("the MCP server", contains(textOf("#mcp-list"), "https://mcp.example.com/mcp"))
	b.do("an API key",
		chromedp.SendKeys(chromedp.CSS("#key-name"), "laptop"),
		chromedp.Click(chromedp.CSS(`[data-form="create-key"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#key-dialog")),
	)
	if key := eval[string](b, `document.querySelector("#key-value").value`); len(key) < 20 {
		t.Fatalf("the new key shown is %q", key)
	}
	b.do("close the key", chromedp.Click(chromedp.CSS("#key-dialog [data-close-dialog]")))
	b.waitFor("the key listed", contains(textOf("#keys td"), "laptop"))

	// Users, for admins.
	b.open("/settings/users")
	b.do("a user",
		chromedp.SendKeys(chromedp.CSS("#user-name"), "casey"),
		chromedp.Click(chromedp.CSS(`[data-form="create-user"] button[type="submit"]`)),
	)
	b.waitFor("the user", contains(textOf("table.list td"), "casey"))

	// Conversations: a few short ones, and one with every kind of event.
	for _, text := range []string{"Summarise the README", "List the open TODOs"} {
		model.Push(llmtest.Text("Done."))
		var task struct {
			ID string `json:"id"`
		}
		e.must("POST", "/api/v1/app-conversations", adminKey, map[string]any{"title": text,
			"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "run": true}}, http.StatusOK, &task)
	}
	e.eventually("the short conversations to finish", func() bool { return model.Remaining() == 0 && len(model.Requests()) == 2 })

	// The list follows its conversations: a row is rendered again when its conversation
	// moves, without a reload.
	b.open("/conversations")
	// Both rows finished, so neither changes again before the mark: a row still running when
	// the page was read is rendered again by the stream once it finishes.
	b.waitFor("the finished rows", `Array.from(document.querySelectorAll(".conv-row")).filter(r => r.textContent.includes("Finished")).length === 2`)
	first := eval[string](b, `document.querySelector(".conv-row").dataset.id`)
	eval[bool](b, `(document.querySelectorAll(".conv-row").forEach(r => r.dataset.old = "1"), window.__mark = 3) === 3`)
	model.Push(llmtest.Step{Reply: &llmtest.Reply{Text: "More.", Usage: llm.Usage{PromptTokens: 500000, CompletionTokens: 1000}}})
	e.must("POST", "/api/v1/app-conversations/"+first+"/send-message", adminKey,
		map[string]any{"content": []any{map[string]any{"type": "text", "text": "And more"}}}, http.StatusOK, nil)
	b.waitFor("the row rendered again with its new cost", `!document.getElementById("row-`+first+`").dataset.old && `+
		`document.querySelector("#row-`+first+` .conv-cost").textContent !== "$0.00"`)
	if n := eval[int](b, `document.querySelectorAll(".conv-row[data-old]").length`); n != 1 {
		t.Errorf("%d rows kept, want the other row untouched", n)
	}
	if mark := eval[int](b, `window.__mark || 0`); mark != 3 {
		t.Error("the list was loaded again")
	}
	model.Push(showcase(t)...)
	b.open("/conversations/new")
	b.waitFor("the repositories", `document.querySelectorAll("#repository-options option").length === 2`)
	b.waitFor("the suggested task", contains(textOf("#suggested-tasks button"), "Greet forgets the comma"))
	b.do("start",
		chromedp.SendKeys(chromedp.CSS("#message"), "The greet test fails: fix Greet and run the tests."),
		chromedp.Click(chromedp.CSS(`#new-conversation button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#conversation")),
	)
	b.waitFor("the agent's answer", contains(textOf(".msg-agent .md"), "Fixed Greet"))
	b.waitFor("the finished status", contains(textOf("#execution-status"), "Finished"))
	if n := eval[int](b, `document.querySelectorAll("pre.term span.f1, pre.term span.f2").length`); n < 3 {
		t.Errorf("the terminal output shows %d coloured spans, want its colours", n)
	}
	if n := eval[int](b, `document.querySelectorAll(".tasks li.task-done").length`); n < 2 {
		t.Errorf("the task list shows %d done tasks, want 2", n)
	}
	convPath := eval[string](b, `location.pathname`)

	// The tabs work with the keyboard.
	b.do("the tabs", chromedp.Focus(chromedp.CSS("#tab-activity")), chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor("the changes tab", `!document.querySelector("#panel-changes").hidden && !document.querySelector("#panel-changes").textContent.includes("Loading")`)
	b.do("the files tab", chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor("the files", contains(textOf("#panel-files"), "greet.go"))
	b.do("back", chromedp.KeyEvent(kb.ArrowRight))

	// Every page, at both widths; the conversation and the list in the dark too.
	pages := []struct{ name, path string }{
		{"conversations", "/conversations"}, {"new-conversation", "/conversations/new"}, {"conversation", convPath},
		{"sandboxes", "/sandboxes"}, {"settings", "/settings"}, {"users", "/settings/users"},
	}
	for _, scheme := range []string{"light", "dark"} {
		for _, w := range []int64{phone, desktop} {
			b.view(w, scheme)
			for _, p := range pages {
				if scheme == "dark" && p.name != "conversation" && p.name != "conversations" {
					continue
				}
				b.open(p.path)
				if p.name == "conversation" {
					b.waitFor("the events", `document.querySelectorAll("#events > li").length > 5`)
					eval[bool](b, `(window.scrollTo(0, document.body.scrollHeight), true)`)
				}
				name := fmt.Sprintf("%s-%d", p.name, w)
				if scheme == "dark" {
					name += "-dark"
				}
				b.screenshot(name)
			}
		}
	}

	// Sandboxes: pause one, resume it.
	b.view(desktop, "light")
	b.open("/sandboxes")
	b.do("pause a sandbox", chromedp.Click(chromedp.CSS(`[data-call$="/pause"]`)))
	b.waitFor("the paused sandbox", `!!document.querySelector('[data-call$="/resume"]')`)
	b.do("resume it", chromedp.Click(chromedp.CSS(`[data-call$="/resume"]`)))
	b.waitFor("the running sandboxes", `!document.querySelector('[data-call$="/resume"]')`)

	// Sign out.
	b.do("sign out", chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.CSS("#api_key")))
	b.open("/settings")
	if path := eval[string](b, `location.pathname`); path != "/sign-in" {
		t.Errorf("after signing out /settings leads to %s, want the sign-in page", path)
	}
	b.checkClean()
}
