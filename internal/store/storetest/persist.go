package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

func testCloseTwice(t *testing.T, s store.Store) {
	ok(t, "close", s.Close())
	ok(t, "close again", s.Close())
}

// testPersistence writes one of everything, closes the store, reopens it and reads it all back.
func testPersistence(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()

	u := newUser(ownerA, 1)
	k := newAPIKey("key-1", u.ID, 1)
	created, err := s.Bootstrap(ctx, u, k)
	ok(t, "bootstrap", err)
	if !created {
		t.Fatal("bootstrap created nothing")
	}
	set := newSettings(ownerA, 1)
	ok(t, "put settings", s.PutSettings(ctx, set))
	tokens := []gitprovider.Token{{Provider: gitprovider.GitHub, TokenSealed: []byte("sealed"), UpdatedAt: at(1)}}
	ok(t, "replace tokens", s.ReplaceProviderTokens(ctx, ownerA, tokens))
	sec := newCustomSecret("API_TOKEN", 1)
	ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, sec, customsecret.MaxPerUser))
	spec := newSpec("spec-1", 1)
	ok(t, "put spec", s.PutSpec(ctx, spec))
	sb := newSandbox(ownerA, "sb-1", 1, sandbox.StatusRunning)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	c := newConversation(ownerA, "conv-1", 1)
	c.SandboxID = sb.ID
	task := newTask(c)
	evs := []event.Event{newEvent(c.ID, "ev-1", 1), newEvent(c.ID, "ev-2", 2)}
	ok(t, "create conversation", s.CreateConversation(ctx, c, task, evs[:1], conversation.Claim{}))
	ok(t, "append events", s.AppendEvents(ctx, evs[1:]))
	wantEvents, _, err := s.SearchEvents(ctx, ownerA, event.Filter{}, false, paging.Query{})
	ok(t, "search events", err)

	ok(t, "close", s.Close())
	s = f.Reopen(t, s)

	gotKey, gotUser, err := s.LookupAPIKey(ctx, k.Hash)
	ok(t, "look up key after reopen", err)
	equal(t, "key after reopen", gotKey, k)
	equal(t, "user after reopen", gotUser, u)
	users, _, err := s.ListUsers(ctx, paging.Query{})
	ok(t, "list users after reopen", err)
	equal(t, "users after reopen", users, []auth.User{u})
	gotSet, err := s.GetSettings(ctx, ownerA)
	ok(t, "get settings after reopen", err)
	equal(t, "settings after reopen", gotSet, set)
	gotTokens, err := s.ProviderTokens(ctx, ownerA)
	ok(t, "get tokens after reopen", err)
	equal(t, "tokens after reopen", gotTokens, tokens)
	gotSecret, err := s.GetCustomSecret(ctx, ownerA, sec.Name)
	ok(t, "get secret after reopen", err)
	equal(t, "secret after reopen", gotSecret, sec)
	gotSpec, err := s.GetSpec(ctx, spec.ID)
	ok(t, "get spec after reopen", err)
	equal(t, "spec after reopen", gotSpec, spec)
	gotSB, err := s.GetSandbox(ctx, ownerA, sb.ID)
	ok(t, "get sandbox after reopen", err)
	equal(t, "sandbox after reopen", gotSB, sb)
	gotView, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation after reopen", err)
	want := view(c, task)
	want.SandboxStatus = sandbox.StatusRunning
	want.SandboxKeySealed = sb.SessionKeySealed
	equal(t, "conversation after reopen", gotView, want)
	gotTask, err := s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get task after reopen", err)
	equal(t, "task after reopen", gotTask, task)
	gotEvents, _, err := s.SearchEvents(ctx, ownerA, event.Filter{}, false, paging.Query{})
	ok(t, "search events after reopen", err)
	equal(t, "events after reopen", gotEvents, wantEvents)

	// Seq keeps increasing across a restart.
	more := []event.Event{newEvent(c.ID, "ev-3", 3)}
	ok(t, "append after reopen", s.AppendEvents(ctx, more))
	if last := wantEvents[len(wantEvents)-1].Seq; more[0].Seq <= last {
		t.Fatalf("Seq after reopen %d, want more than %d", more[0].Seq, last)
	}
	pending, err := s.PendingStartTasks(ctx)
	ok(t, "pending tasks after reopen", err)
	equal(t, "pending tasks after reopen", pending, []conversation.StartTask{task})
}
