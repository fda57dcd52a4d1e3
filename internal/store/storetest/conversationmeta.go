package storetest

import (
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testConversationMetadata(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-meta", 1)
	c.Public, c.Tags = ptr(false), map[string]string{"automation": "nightly", "kind": "report"}
	task := createConversation(t, s, c)
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation with public and tags", got, view(c, task))

	// A generated title is set while the user has named nothing.
	set, err := s.SetGeneratedTitle(ctx, ownerA, c.ID, "Fix the flaky test", at(2))
	ok(t, "set generated title", err)
	if !set {
		t.Fatal("generated title not set on a conversation the user did not name")
	}
	want := c
	want.Title, want.UpdatedAt = "Fix the flaky test", at(2)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get titled conversation", err)
	equal(t, "titled conversation", got, view(want, task))

	// A patch changes what it names and nothing else; its title is the user's.
	ok(t, "patch", s.PatchConversation(ctx, ownerA, c.ID, conversation.Patch{
		Title: ptr("My title"), Public: ptr(true), SelectedBranch: ptr("dev"),
	}, at(3)))
	want.Title, want.Public, want.SelectedBranch, want.TitleByUser, want.UpdatedAt = "My title", ptr(true), ptr("dev"), true, at(3)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get patched conversation", err)
	equal(t, "patched conversation", got, view(want, task))
	ok(t, "patch repository and provider", s.PatchConversation(ctx, ownerA, c.ID, conversation.Patch{
		SelectedRepository: ptr("acme/web"), GitProvider: ptr("gitlab"),
	}, at(4)))
	want.SelectedRepository, want.GitProvider, want.UpdatedAt = ptr("acme/web"), ptr("gitlab"), at(4)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get patched conversation", err)
	equal(t, "conversation patched again", got, view(want, task))
	vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{TitleContains: "my TITLE"}, paging.Query{})
	ok(t, "search by the new title", err)
	if len(vs) != 1 || vs[0].ID != c.ID {
		t.Fatalf("search by the patched title found %v", ids(vs, viewID))
	}

	// Once the user named it, a generated title never replaces theirs.
	set, err = s.SetGeneratedTitle(ctx, ownerA, c.ID, "Generated later", at(5))
	ok(t, "set generated title after the user's", err)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	if set || got.Title != "My title" {
		t.Fatalf("generated title replaced the user's: set %v, title %q", set, got.Title)
	}

	is(t, "B patches A's conversation", s.PatchConversation(ctx, ownerB, c.ID, conversation.Patch{Title: ptr("x")}, at(6)), conversation.ErrNotFound)
	_, err = s.SetGeneratedTitle(ctx, ownerB, c.ID, "x", at(6))
	is(t, "B titles A's conversation", err, conversation.ErrNotFound)
}

func testPendingMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-pending", 1)
	task := createConversation(t, s, c)
	pm := func(n int) conversation.PendingMessage {
		return conversation.PendingMessage{ID: "pm-" + string(rune('a'+n)), ConversationID: c.ID,
			Message: conversation.Message{Text: "message " + string(rune('a'+n)), ImageURLs: []string{"https://img/" + string(rune('a'+n))}}, CreatedAt: at(2 + n)}
	}
	for i := range 3 {
		pos, err := s.AddPendingMessage(ctx, ownerA, pm(i), 3)
		ok(t, "add pending message", err)
		if pos != i+1 {
			t.Fatalf("pending message %d at position %d", i, pos)
		}
	}
	_, err := s.AddPendingMessage(ctx, ownerA, pm(3), 3)
	is(t, "a fourth pending message over a bound of 3", err, conversation.ErrTooManyPending)
	_, err = s.AddPendingMessage(ctx, ownerB, pm(4), 10)
	is(t, "B queues on A's conversation", err, conversation.ErrNotFound)

	got, err := s.PendingMessages(ctx, c.ID)
	ok(t, "pending messages", err)
	equal(t, "pending messages", got, []conversation.PendingMessage{pm(0), pm(1), pm(2)})
	convs, err := s.ConversationsWithPendingMessages(ctx)
	ok(t, "conversations with pending messages", err)
	if len(convs) != 1 || convs[0].ID != c.ID {
		t.Fatalf("conversations with pending messages: %+v", convs)
	}

	// Delivery removes the messages and appends their events in one transaction; a message
	// delivered already is not delivered again.
	evs := []event.Event{newEvent(c.ID, "ev-pm-a", 10), newEvent(c.ID, "ev-pm-b", 11)}
	ok(t, "deliver two", s.DeliverPendingMessages(ctx, c.ID, []string{"pm-a", "pm-b"}, evs, conversation.StateUpdate{UpdatedAt: at(12)}))
	again := []event.Event{newEvent(c.ID, "ev-pm-a2", 13)}
	is(t, "deliver one again", s.DeliverPendingMessages(ctx, c.ID, []string{"pm-a"}, again, conversation.StateUpdate{}), conversation.ErrNotFound)
	got, err = s.PendingMessages(ctx, c.ID)
	ok(t, "pending messages after delivery", err)
	equal(t, "pending messages after delivery", got, []conversation.PendingMessage{pm(2)})
	logged, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID}, false, paging.Query{})
	ok(t, "events after delivery", err)
	if len(logged) != 2 || logged[0].ID != "ev-pm-a" || logged[1].ID != "ev-pm-b" {
		t.Fatalf("events after delivery: %v", ids(logged, func(e event.Event) string { return e.ID }))
	}

	// Once the start task is READY, messages are sent, not queued.
	task.Status, task.UpdatedAt = conversation.TaskReady, at(20)
	ok(t, "task ready", s.UpdateStartTask(ctx, task))
	_, err = s.AddPendingMessage(ctx, ownerA, pm(5), 10)
	is(t, "queue on a ready conversation", err, conversation.ErrReady)
	bare := newConversation(ownerA, "conv-no-task", 2)
	ok(t, "create a conversation without a task", s.CreateConversation(ctx, bare, conversation.StartTask{}, nil, conversation.Claim{}))
	_, err = s.AddPendingMessage(ctx, ownerA, conversation.PendingMessage{ID: "pm-bare", ConversationID: bare.ID, CreatedAt: at(3)}, 10)
	is(t, "queue on a conversation without a task", err, conversation.ErrReady)

	// Deleting the conversation deletes what still waits.
	ok(t, "delete the conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	got, err = s.PendingMessages(ctx, c.ID)
	ok(t, "pending messages of a deleted conversation", err)
	if len(got) != 0 {
		t.Fatalf("pending messages outlived their conversation: %+v", got)
	}
}

// testConversationSecrets: a conversation's secrets change only from what they are, in
// listings too, and only for their owner.
func testConversationSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-secrets", 1)
	task := createConversation(t, s, c)
	from := conversation.SecretSet{Names: c.SecretNames, Sealed: c.SecretsSealed}
	to := conversation.SecretSet{Names: []string{"API_TOKEN", "DEPLOY_KEY", "NEW_ONE"}, Sealed: []byte("sealed secrets, more")}
	ok(t, "set secrets", s.SetConversationSecrets(ctx, ownerA, c.ID, from, to, at(2)))
	want := c
	want.SecretNames, want.SecretsSealed, want.UpdatedAt = to.Names, to.Sealed, at(2)
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation with its new secrets", got, view(want, task))
	vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, paging.Query{})
	ok(t, "list", err)
	if i := slices.IndexFunc(vs, func(v conversation.View) bool { return v.ID == c.ID }); i < 0 ||
		!slices.Equal(vs[i].SecretNames, to.Names) || string(vs[i].SecretsSealed) != string(to.Sealed) {
		t.Fatalf("the listing does not show the new secrets: %+v", vs)
	}

	// From what they were before: refused, nothing written.
	is(t, "set from stale secrets", s.SetConversationSecrets(ctx, ownerA, c.ID, from, conversation.SecretSet{Names: []string{"X"}}, at(3)),
		conversation.ErrSecretsChanged)
	is(t, "set from stale names", s.SetConversationSecrets(ctx, ownerA, c.ID, conversation.SecretSet{Names: from.Names, Sealed: to.Sealed},
		conversation.SecretSet{Names: []string{"X"}}, at(3)), conversation.ErrSecretsChanged)
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation after refused changes", got, view(want, task))

	// To none, and from none.
	none := conversation.SecretSet{Names: []string{}}
	ok(t, "clear secrets", s.SetConversationSecrets(ctx, ownerA, c.ID, to, conversation.SecretSet{}, at(4)))
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	if len(got.SecretNames) != 0 || got.SecretsSealed != nil {
		t.Fatalf("cleared secrets read back as %v, %q", got.SecretNames, got.SecretsSealed)
	}
	ok(t, "set secrets from none", s.SetConversationSecrets(ctx, ownerA, c.ID, none, to, at(5)))

	is(t, "B sets A's secrets", s.SetConversationSecrets(ctx, ownerB, c.ID, to, none, at(6)), conversation.ErrNotFound)
	is(t, "an unknown conversation", s.SetConversationSecrets(ctx, ownerA, "conv-none", none, to, at(6)), conversation.ErrNotFound)
}
