package web_test

import (
	"net/http"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestBrowserConfirmation: with every action waiting for the user, the page shows what
// waits and the Accept and Reject buttons; accepting runs the action, rejecting gives the
// agent the reason.
func TestBrowserConfirmation(t *testing.T) {
	e := newEnv(t)
	b := newBrowser(t, e)
	e.scripted(adminKey,
		terminal(t, "echo accepted-and-run"),
		terminal(t, "echo never-run"),
		llmtest.Text("Understood, I will not run it."),
	)
	id := "c0f1a2b3c4d5e6f708192a3b4c5d6e7f"
	e.must("POST", "/api/v1/app-conversations", adminKey, map[string]any{"conversation_id": id,
		"confirmation_policy": map[string]any{"kind": "AlwaysConfirm"},
		"initial_message":     map[string]any{"content": []any{map[string]any{"type": "text", "text": "Run two commands"}}, "run": true}},
		http.StatusOK, nil)
	b.signIn(adminKey)
	b.open("/conversations/" + id)

	b.waitFor("the waiting action", `!!document.querySelector('.act.pending')`)
	b.press("accept", `[data-action="accept"]`)
	b.waitFor("the accepted command's output", contains(textOf("pre.term"), "accepted-and-run"))

	b.waitFor("the next question", `!!document.querySelector('[data-action="reject"]') && !!document.querySelector('.act.pending')`)
	b.waitFor("the reason typed", `(() => { const r = document.querySelector("#reject-reason"); if (!r) return false; r.value = "not on this machine"; return true })()`)
	b.press("reject", `[data-action="reject"]`)
	b.waitFor("the rejection", contains(textOf(".rejected"), "not on this machine"))
	b.waitFor("the agent's answer", contains(textOf(".msg-agent .md"), "Understood, I will not run it."))
	if n := eval[int](b, `document.querySelectorAll("pre.term").length`); n != 1 {
		t.Errorf("%d terminal outputs shown, want the accepted command's alone", n)
	}
	b.checkClean()
}
