package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestBrowserReconnectAfterRestart keeps a conversation's page open while the server
// restarts in the middle of the agent's work: the page reconnects by itself, and shows every
// event of the log once, those before the restart and those after.
func TestBrowserReconnectAfterRestart(t *testing.T) {
	e := newEnv(t)
	b := newBrowser(t, e)
	model := e.scripted(adminKey,
		terminal(t, "echo before-the-restart"),
		busyModel(), // in flight when the server stops; the restarted server asks again
		terminal(t, "echo after-the-restart"),
		llmtest.Text("Finished after the restart."),
	)
	id := "5e55a0e0c0de4c0ffee0123456789abc"
	e.must("POST", "/api/v1/app-conversations", adminKey, map[string]any{"conversation_id": id,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Say something twice"}}, "run": true}},
		http.StatusOK, nil)

	b.signIn(adminKey)
	b.open("/conversations/" + id)
	eval[bool](b, `(window.__mark = 7) === 7`)
	b.waitFor("the output before the restart", contains(textOf("pre.term"), "before-the-restart"))
	e.eventually("the model call in flight", func() bool { return len(model.Requests()) >= 2 })

	e.restart()

	b.waitFor("the output after the restart", contains(textOf("pre.term"), "after-the-restart"))
	b.waitFor("the last answer", contains(textOf(".msg-agent .md"), "Finished after the restart."))
	if mark := eval[int](b, `window.__mark || 0`); mark != 7 {
		t.Fatal("the page was loaded again; it was meant to reconnect by itself")
	}

	// Every event the page shows as an item of its own is there once, and no other.
	var page struct {
		Items []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"items"`
	}
	e.must("GET", "/api/v1/conversation/"+id+"/events/search?limit=100", adminKey, nil, http.StatusOK, &page)
	want := 0
	for _, ev := range page.Items {
		switch ev.Kind {
		case "ConversationStateUpdateEvent", "ObservationEvent":
			continue // the status line; inside its action's card
		}
		want++
		if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll('[data-event=%s]').length`, jsString(ev.ID))); n != 1 {
			t.Errorf("event %s (%s) is shown %d times, want once", ev.ID, ev.Kind, n)
		}
	}
	if n := eval[int](b, `document.querySelectorAll('#events > [data-event]').length`); n != want {
		t.Errorf("the page shows %d events, want %d", n, want)
	}
	if n := eval[int](b, `document.querySelectorAll('pre.term').length`); n != 2 {
		t.Errorf("the page shows %d terminal outputs, want 2", n)
	}
	b.do("the page still answers", chromedp.WaitVisible(chromedp.CSS("#composer-text")))
	b.checkClean()
}
