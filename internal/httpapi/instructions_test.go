package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestV1Instructions: a V1 conversation's instructions reach the model as system-level
// context, not as a message, and still do after a restart of the server.
func TestV1Instructions(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("Bonjour."))
	const instructions = "Always answer in French."
	c := e.startAgent(alice, map[string]any{
		"initial_message":           message("hello", true),
		"conversation_instructions": instructions,
	})
	c.waitStatus("finished")
	wantInSystem := func(req llmtest.RecordedRequest) {
		t.Helper()
		block := "<CONVERSATION_INSTRUCTIONS>"
		i := strings.Index(req.System, block)
		if i < 0 || !strings.Contains(req.System[i:], instructions) {
			t.Fatalf("the system prompt lacks the instructions: %.300s", req.System[max(0, len(req.System)-300):])
		}
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), instructions) {
				t.Fatalf("the instructions came as a %s message", m.Role)
			}
		}
	}
	if reqs := srv.Requests(); len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	} else {
		wantInSystem(reqs[0])
	}

	e.restart()
	srv.Push(llmtest.Text("Toujours."))
	c.api("POST", "/events", message("again", true), http.StatusOK, nil)
	c.waitStatus("finished")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	wantInSystem(reqs[1])
}
