package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox"
)

// heldBackend holds every call of one kind (Start or Destroy) until release, and says on
// began that one began.
type heldBackend struct {
	sandbox.Backend
	destroy bool // Destroy is held, else Start
	began   chan struct{}
	gate    chan struct{}
	release func()
}

// holdBackend restarts e's server on a backend whose Starts (or Destroys, when destroy) wait
// for release; the test's end releases them too.
func holdBackend(t *testing.T, e *env, destroy bool) *heldBackend {
	held := &heldBackend{destroy: destroy, began: make(chan struct{}, 1), gate: make(chan struct{})}
	held.release = sync.OnceFunc(func() { close(held.gate) })
	t.Cleanup(held.release)
	e.wrapBackend = func(b sandbox.Backend) sandbox.Backend { held.Backend = b; return held }
	e.restart()
	return held
}

func (b *heldBackend) hold() {
	select {
	case b.began <- struct{}{}:
	default:
	}
	<-b.gate
}

// awaitBegan waits until a held call began.
func (b *heldBackend) awaitBegan(t *testing.T, what string) {
	t.Helper()
	select {
	case <-b.began:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not begin", what)
	}
}

func (b *heldBackend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	if !b.destroy {
		b.hold()
	}
	return b.Backend.Start(ctx, req)
}

func (b *heldBackend) Destroy(ctx context.Context, inst sandbox.Instance) error {
	if b.destroy {
		b.hold()
	}
	return b.Backend.Destroy(ctx, inst)
}

// TestDeleteWhileItsSandboxStarts: a conversation deleted while its sandbox starts (the
// deletion finds no sandbox yet) leaves no sandbox behind: its start task, finding the
// conversation gone, deletes the sandbox it started.
func TestDeleteWhileItsSandboxStarts(t *testing.T) {
	e := newEnv(t)
	held := holdBackend(t, e, false)
	_, alice := e.newUser("alice")
	id := e.v0Create(alice, map[string]any{})
	held.awaitBegan(t, "the conversation's sandbox start")
	e.must("DELETE", "/api/conversations/"+id, alice, nil, http.StatusOK, nil)
	held.release()
	var page sandboxPageJSON
	e.eventually("the started sandbox to be deleted", func() bool {
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		return len(page.Items) == 0
	}, func() string { return fmt.Sprintf("sandboxes: %+v", page.Items) })
}

// TestDeleteStartsNoRun: while a conversation is being deleted (here, held in its sandbox's
// removal), a message that asks for a run starts none, so no agent runs against a sandbox
// that is going away; and the deletion logs no error.
func TestDeleteStartsNoRun(t *testing.T) {
	e := newEnv(t)
	held := holdBackend(t, e, true)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("Hello."))
	c := e.startAgent(alice, map[string]any{})
	req, err := http.NewRequest("DELETE", e.srv.URL+"/api/conversations/"+c.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Session-API-Key", alice)
	deleted := make(chan error, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		deleted <- err
	}()
	held.awaitBegan(t, "the deletion's removal of the sandbox")
	c.api("POST", "/events", message("hello?", true), http.StatusOK, nil)
	if e.app.Conversations.AgentRunning(c.id) {
		t.Error("a message started a run of a conversation being deleted")
	}
	held.release()
	if err := <-deleted; err != nil {
		t.Fatalf("delete: %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times for a deleted conversation", n)
	}
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("the deletion logged an error: %s", l)
		}
	}
}
