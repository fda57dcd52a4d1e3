package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestIdleSandboxIsPaused: with an idle timeout, a sandbox whose agent is done and that
// nobody uses is paused, the pause is recorded on its conversation, and it resumes on demand.
// The sandbox service's clock moves only when the test advances it, so the sandbox cannot
// fall idle while the conversation starts, however slow the machine.
func TestIdleSandboxIsPaused(t *testing.T) {
	const timeout = time.Hour
	e := newEnv(t, func(c *config.Config) { c.SandboxIdleTimeout = timeout })
	_, alice := e.newUser("alice")
	e.scripted(alice, llmtest.Text("Hello."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("hi", true)})
	c.waitStatus("finished")

	// The agent lets go of its sandbox just after it reports finished; each round moves the
	// clock past the timeout and runs a watcher pass until one finds the sandbox let go.
	status := ""
	e.eventually("the idle sandbox to be paused", func() bool {
		e.sandboxClock.Advance(timeout)
		if err := e.app.Sandboxes.Watch(context.Background()); err != nil {
			t.Fatal(err)
		}
		status = e.sandboxStatus(alice, c.sandboxID)
		return status == "PAUSED"
	}, func() string { return "it is " + status })
	// The watcher records the pause on the conversation right after the sandbox's status.
	var seen []wireEvent
	e.eventually("a SandboxPausedEvent", func() bool {
		seen = c.events()
		return slices.ContainsFunc(seen, func(ev wireEvent) bool { return ev.Kind == "SandboxPausedEvent" })
	}, func() string { return fmt.Sprint("events ", labels(seen)) })

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

// TestNoIdlePauseByDefault: without the setting nothing is paused behind the user's back,
// however long the sandbox is left alone.
func TestNoIdlePauseByDefault(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	var sb struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/sandboxes", alice, nil, http.StatusOK, &sb)
	e.waitSandbox(alice, sb.ID, "RUNNING")
	e.sandboxClock.Advance(1000 * time.Hour)
	if err := e.app.Sandboxes.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := e.sandboxStatus(alice, sb.ID); st != "RUNNING" {
		t.Fatalf("a sandbox was paused with no idle timeout set: %s", st)
	}
}
