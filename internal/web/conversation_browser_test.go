package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

var workspaceInPrompt = regexp.MustCompile(`a workspace directory at (\S+)\. `)

// callIn is a step that calls a tool with arguments made from the workspace's path.
func callIn(t *testing.T, name string, args func(ws string) map[string]any) llmtest.Step {
	return llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		ws := "/workspace"
		if m := workspaceInPrompt.FindStringSubmatch(req.System); m != nil {
			ws = m[1]
		} else {
			t.Errorf("the system prompt names no workspace: %.200s", req.System)
		}
		b, _ := json.Marshal(args(ws))
		return llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: name, Arguments: string(b)}},
			Usage: llm.Usage{PromptTokens: 1200, CompletionTokens: 80}}}
	}}
}

func terminal(t *testing.T, cmd string) llmtest.Step {
	return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": cmd} })
}

// xssCommand prints markup that would run script if a page took it for HTML.
const xssCommand = `printf '%s\n' '<script>window.__xss=1</script>' '<img src=x onerror="window.__xss=2">' 'ok: \033[1;32mgreen\033[0m'`

// busyModel is a model call that lasts until agentd drops it (a pause does).
func busyModel() llmtest.Step {
	return llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
}

// TestBrowserConversation signs in, starts a conversation against the scripted model and
// watches its work arrive without a reload: the terminal output (markup the command printed
// shown as text), the diff of the file the agent wrote; then pauses and resumes the agent,
// sends a message and deletes the conversation.
func TestBrowserConversation(t *testing.T) {
	e := newEnv(t)
	b := newBrowser(t, e)
	e.scripted(adminKey,
		terminal(t, xssCommand),
		callIn(t, "file_editor", func(ws string) map[string]any {
			return map[string]any{"command": "create", "path": ws + "/hello.py", "file_text": "def main():\n    print('hello, world')\n"}
		}),
		busyModel(),
		llmtest.Text("All done: **hello.py** prints a greeting."),
		llmtest.Text("Got your message about the tests."),
	)

	b.signIn(adminKey)
	b.open("/conversations/new")
	b.do("start a conversation",
		chromedp.SendKeys(chromedp.CSS("#message"), "Write hello.py that prints a greeting"),
		chromedp.Click(chromedp.CSS(`#new-conversation button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#conversation")),
	)
	// A mark the page keeps unless it is loaded again.
	eval[bool](b, `(window.__mark = 42) === 42`)

	// Terminal output arrives, inert.
	{
		b.waitFor("the command's output", contains(textOf("pre.term"), "<script>window.__xss=1</script>"))
		if got := eval[string](b, textOf("pre.term")); !regexp.MustCompile(`<img src=x onerror="window.__xss=2">`).MatchString(got) {
			t.Errorf("terminal output %q lacks the img markup as text", got)
		}
		if n := eval[int](b, `document.querySelectorAll('#events img, #events script').length`); n != 0 {
			t.Errorf("the events hold %d img or script elements: the output was taken for HTML", n)
		}
		if xss := eval[bool](b, `window.__xss !== undefined`); xss {
			t.Error("a script the agent printed ran")
		}
		if cmd := eval[string](b, textOf("pre.cmd code")); !regexp.MustCompile(`printf`).MatchString(cmd) {
			t.Errorf("the command is not shown: %q", cmd)
		}
	}

	// File diff arrives.
	{
		b.waitFor("the edit of hello.py", contains(textOf(".act .edit code"), "hello.py"))
		b.waitFor("its diff", `!!document.querySelector(".act figure.diff")`)
		b.waitFor("the added lines", contains(textOf("figure.diff tr.add"), "print('hello, world')"))
	}

	// Pause and resume.
	{
		b.press("pause", `[data-action="pause"]`)
		b.waitFor("the paused status", contains(textOf("#execution-status"), "Paused"))
		b.press("resume", `[data-action="resume"]`)
		b.waitFor("the agent's answer", contains(textOf(".msg-agent .md"), "All done: hello.py prints a greeting."))
		b.waitFor("the finished status", contains(textOf("#execution-status"), "Finished"))
		if n := eval[int](b, `document.querySelectorAll('.msg-agent .md strong').length`); n != 1 {
			t.Errorf("the agent's Markdown has %d bold parts, want 1", n)
		}
	}

	// Send a message.
	{
		b.do("send",
			chromedp.SendKeys(chromedp.CSS("#composer-text"), "Now add the tests"),
			chromedp.Click(chromedp.CSS(`#composer button[type="submit"]`)),
		)
		b.waitFor("the message in the list", contains(textOf(".msg-user .md"), "Now add the tests"))
		b.waitFor("the agent's reply", contains(textOf(".msg-agent .md"), "Got your message about the tests."))
	}

	if mark := eval[int](b, `window.__mark || 0`); mark != 42 {
		t.Fatal("the conversation's page was loaded again: its events were meant to arrive live")
	}
	id := eval[string](b, `document.querySelector('#conversation').dataset.id`)

	// Delete.
	{
		b.do("delete", chromedp.Click(chromedp.CSS(`.conv-head [data-delete-conversation]`)), chromedp.WaitVisible(chromedp.CSS("#q")))
		if n := eval[int](b, `document.querySelectorAll('#row-`+id+`').length`); n != 0 {
			t.Error("the deleted conversation is still listed")
		}
		if status, _ := e.call("GET", "/api/conversations/"+id, adminKey, nil); status != http.StatusNotFound {
			t.Errorf("the deleted conversation answers %d, want 404", status)
		}
	}
	b.checkClean()
}
