package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// testCanceledWrites: a write whose context ends while it runs (a sandbox's creation and
// deletion, a conversation's creation, a record of events) either took effect and says so,
// or failed and left nothing. A caller told that its write failed (a start cut short by a
// shutdown, say) must never find the row afterwards, nor miss one it was told is there.
func testCanceledWrites(t *testing.T, s store.Store) {
	const rounds = 200
	for i := range rounds {
		sb := newSandbox(ownerA, fmt.Sprintf("sb-cancel-%d", i), i, sandbox.StatusStarting)
		sandboxThere := func() bool {
			_, err := s.GetSandbox(t.Context(), ownerA, sb.ID)
			return present(t, err, sandbox.ErrNotFound)
		}
		if cutShort(t, "create sandbox", func(ctx context.Context) error { return s.CreateSandbox(ctx, sb, 0) }, sandboxThere, true) {
			cutShort(t, "delete sandbox", func(ctx context.Context) error { return s.DeleteSandbox(ctx, sb.ID) }, sandboxThere, false)
		}

		c := newConversation(ownerA, fmt.Sprintf("conv-cancel-%d", i), i)
		created := cutShort(t, "create conversation", func(ctx context.Context) error {
			return s.CreateConversation(ctx, c, newTask(c), nil, conversation.Claim{})
		}, func() bool {
			_, err := s.GetConversation(t.Context(), ownerA, c.ID)
			return present(t, err, conversation.ErrNotFound)
		}, true)
		if created {
			ev := newEvent(c.ID, fmt.Sprintf("ev-cancel-%d", i), i)
			cutShort(t, "record events", func(ctx context.Context) error {
				return recordEvents(s, ctx, c.ID, []event.Event{ev}, conversation.StateUpdate{ExecutionStatus: "running"})
			}, func() bool {
				evs, err := s.ConversationEvents(t.Context(), c.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				return len(evs) == 1 && evs[0].ID == ev.ID
			}, true)
		}
	}
}

// cutShort runs write under a context canceled at a random moment (before, during or after
// the statement) and checks that there reports what write said it did: the row is there
// after a write that adds it (adds) and reported success, and not after one that failed,
// and the other way round for a write that removes it. It reports whether write succeeded.
func cutShort(t *testing.T, what string, write func(ctx context.Context) error, there func() bool, adds bool) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	timer := time.AfterFunc(time.Duration(rand.IntN(200))*time.Microsecond, cancel)
	defer timer.Stop()
	err := write(ctx)
	if got, want := there(), (err == nil) == adds; got != want {
		t.Fatalf("%s returned %v, and the row is there afterwards: %v", what, err, got)
	}
	return err == nil
}

// present reports whether a get found its row: err is nil or notFound, anything else fails t.
func present(t *testing.T, err, notFound error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, notFound) {
		t.Fatal(err)
	}
	return err == nil
}
