package storetest

import (
	"fmt"
	"maps"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// testCounts: the tallies count every owner's rows by state, and follow changes.
func testCounts(t *testing.T, s store.Store) {
	ctx := t.Context()
	c, err := s.Counts(ctx)
	ok(t, "counts of an empty store", err)
	if len(c.Sandboxes) != 0 || len(c.Conversations) != 0 {
		t.Fatalf("counts of an empty store: %+v", c)
	}
	for i, st := range []sandbox.Status{sandbox.StatusRunning, sandbox.StatusRunning, sandbox.StatusPaused, sandbox.StatusError} {
		owner := ownerA
		if i%2 == 1 {
			owner = ownerB
		}
		sb := newSandbox(owner, fmt.Sprintf("sb-%d", i), i, st)
		if i == 3 {
			sb.Backend, sb.Node = "bwrap", "node-b"
		}
		ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	}
	for i, st := range []string{"running", "finished", "finished", ""} {
		owner := ownerA
		if i%2 == 1 {
			owner = ownerB
		}
		cv := newConversation(owner, fmt.Sprintf("conv-%d", i), i)
		createConversation(t, s, cv)
		if st != "" {
			ok(t, "set status", recordEvents(s, ctx, cv.ID, nil, conversation.StateUpdate{ExecutionStatus: st}))
		}
	}
	c, err = s.Counts(ctx)
	ok(t, "counts", err)
	if want := (map[store.SandboxKey]int{
		{Backend: "process", Node: "node-a", Status: sandbox.StatusRunning}: 2,
		{Backend: "process", Node: "node-a", Status: sandbox.StatusPaused}:  1,
		{Backend: "bwrap", Node: "node-b", Status: sandbox.StatusError}:     1,
	}); !maps.Equal(c.Sandboxes, want) {
		t.Fatalf("sandbox counts: got %v, want %v", c.Sandboxes, want)
	}
	equal(t, "conversation counts", c.Conversations, map[string]int{"running": 1, "finished": 2, "": 1})

	ok(t, "delete sandbox", s.DeleteSandbox(ctx, "sb-2"))
	c, err = s.Counts(ctx)
	ok(t, "counts after a delete", err)
	if _, ok := c.Sandboxes[store.SandboxKey{Backend: "process", Node: "node-a", Status: sandbox.StatusPaused}]; ok {
		t.Fatalf("a deleted sandbox is still counted: %+v", c.Sandboxes)
	}
}
