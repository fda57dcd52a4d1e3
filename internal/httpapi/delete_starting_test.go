package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
)

// heldBackend holds every Start until its gate is closed, and says on started that one began.
type heldBackend struct {
	sandbox.Backend
	started chan struct{}
	gate    chan struct{}
}

func (b *heldBackend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-b.gate
	return b.Backend.Start(ctx, req)
}

// TestDeleteWhileItsSandboxStarts: a conversation deleted while its sandbox starts (the
// deletion finds no sandbox yet) leaves no sandbox behind: its start task, finding the
// conversation gone, deletes the sandbox it started.
func TestDeleteWhileItsSandboxStarts(t *testing.T) {
	e := newEnv(t)
	held := &heldBackend{started: make(chan struct{}, 1), gate: make(chan struct{})}
	e.wrapBackend = func(b sandbox.Backend) sandbox.Backend { held.Backend = b; return held }
	e.restart()
	gateOpen := false
	defer func() {
		if !gateOpen {
			close(held.gate)
		}
	}()
	_, alice := e.newUser("alice")
	id := e.v0Create(alice, map[string]any{})
	select {
	case <-held.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the conversation's sandbox did not begin to start")
	}
	e.must("DELETE", "/api/conversations/"+id, alice, nil, http.StatusOK, nil)
	close(held.gate)
	gateOpen = true
	var page sandboxPageJSON
	e.eventually("the started sandbox to be deleted", func() bool {
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		return len(page.Items) == 0
	}, func() string { return fmt.Sprintf("sandboxes: %+v", page.Items) })
}
