package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestIdleSandboxIsPaused: with an idle timeout, a sandbox whose agent is done and that
// nobody uses is paused, the pause is recorded on its conversation, and it resumes on demand.
func TestIdleSandboxIsPaused(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.SandboxIdleTimeout = 700 * time.Millisecond })
	_, alice := e.newUser("alice")
	e.scripted(alice, llmtest.Text("Hello."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hi", true)})
	c.waitStatus("finished")
	e.waitSandbox(alice, c.sandboxID, "PAUSED")

	var found bool
	for _, ev := range c.events() {
		if ev.Kind == "SandboxPausedEvent" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no SandboxPausedEvent in %v", labels(c.events()))
	}
	var conv struct {
		Status string `json:"status"`
	}
	e.must("GET", "/api/conversations/"+c.id, alice, nil, http.StatusOK, &conv)
	if conv.Status != "STOPPED" {
		t.Fatalf("conversation of the paused sandbox is %s", conv.Status)
	}
	e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/resume", alice, nil, http.StatusOK, nil)
	if st := e.sandboxStatus(alice, c.sandboxID); st != "RUNNING" {
		t.Fatalf("after resume: %s", st)
	}
}

// TestNoIdlePauseByDefault: without the setting nothing is paused behind the user's back.
func TestNoIdlePauseByDefault(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	var sb struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/sandboxes", alice, nil, http.StatusOK, &sb)
	e.waitSandbox(alice, sb.ID, "RUNNING")
	time.Sleep(500 * time.Millisecond) // five watcher passes
	if st := e.sandboxStatus(alice, sb.ID); st != "RUNNING" {
		t.Fatalf("a sandbox was paused with no idle timeout set: %s", st)
	}
}
