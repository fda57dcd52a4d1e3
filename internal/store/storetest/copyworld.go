package storetest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

// copyWorld is what fillCopyWorld stored: the keys that a snapshot reads by.
type copyWorld struct {
	owners        []string
	keyHashes     [][]byte
	sessionHashes [][]byte
	sandboxHashes [][]byte
	conversations map[string]string // id: owner
	webhooks      map[string]string // id: owner
	// lastSeq is the greatest Seq the store handed out, that of an event since deleted.
	lastSeq int64
}

// us is i seconds and n microseconds after the suite's epoch: a time with a fraction of a
// second that every store keeps.
func us(i, n int) time.Time { return at(i).Add(time.Duration(n) * time.Microsecond) }

// fillCopyWorld stores, through the interface, rows of every table of the stores' schemas,
// with the values that are easiest to lose in a copy: NULL beside empty, JSON with its own
// spacing and key order, text beyond ASCII, bytes that are not UTF-8, times with
// microseconds, the zero time, counters moved by updates, and Seq values handed out to rows
// deleted since.
func fillCopyWorld(t *testing.T, s store.Store) copyWorld {
	ctx := t.Context()
	w := copyWorld{owners: []string{ownerA, ownerB}, conversations: map[string]string{}, webhooks: map[string]string{}}

	// Users, API keys and a web session.
	ua, ub := newUser(ownerA, 1), newUser(ownerB, 2)
	ua.IsAdmin, ub.CreatedAt = true, us(2, 123456)
	ka, kb := newAPIKey("key-a", ownerA, 1), newAPIKey("key-b", ownerB, 3)
	kb.ExpiresAt = ptr(us(86400, 7))
	created, err := s.Bootstrap(ctx, ua, ka)
	ok(t, "bootstrap", err)
	if !created {
		t.Fatal("bootstrap created nothing")
	}
	ok(t, "create user B", s.CreateUser(ctx, ub))
	ok(t, "create key B", s.CreateAPIKey(ctx, kb, auth.MaxKeysPerUser))
	sess := newSession("b", kb.ID, ownerB, 4, 3600)
	ok(t, "create session", s.CreateSession(ctx, sess))
	w.keyHashes, w.sessionHashes = [][]byte{ka.Hash, kb.Hash}, [][]byte{sess.Hash}

	// Settings, provider tokens, custom secrets and user skills.
	sa := newSettings(ownerA, 1)
	sa.Values = json.RawMessage(`{"llm_model":  "model-a",   "language": "en", "a": [1, 2]}`)
	sb := newSettings(ownerB, 2)
	sb.Values, sb.Secrets = nil, map[string][]byte{}
	ok(t, "put settings A", s.PutSettings(ctx, sa))
	ok(t, "put settings B", s.PutSettings(ctx, sb))
	ok(t, "replace tokens", s.ReplaceProviderTokens(ctx, ownerA, []gitprovider.Token{
		{Provider: gitprovider.GitHub, TokenSealed: []byte("sealed gh \x00\xff"), UpdatedAt: us(1, 1)},
		{Provider: gitprovider.GitLab, TokenSealed: []byte("sealed gl"), Host: "gitlab.example.com", ExternalUserID: "u-42", UpdatedAt: at(2)},
	}))
	ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("API_TOKEN", 1), customsecret.MaxPerUser))
	ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("DEPLOY_KEY", 2), customsecret.MaxPerUser))
	ok(t, "create skill", s.CreateUserSkill(ctx, newUserSkill(ownerA, "style", 1), 10))
	ok(t, "create skill", s.CreateUserSkill(ctx, newUserSkill(ownerA, "deploy", 2, "deploy", "/release"), 10))

	// Specs and sandboxes: one updated (its counter moves), one without a session key.
	ok(t, "put spec", s.PutSpec(ctx, newSpec("spec-default", 1)))
	spec := newSpec("spec-rootfs", 2)
	spec.Image, spec.Rootfs, spec.Network = "", "/srv/rootfs", sandbox.NetworkEgress
	ok(t, "put spec", s.PutSpec(ctx, spec))
	sb1 := newSandbox(ownerA, "sb-1", 1, sandbox.StatusStarting)
	sb2 := newSandbox(ownerB, "sb-2", 2, sandbox.StatusPaused)
	sb2.SessionKeySealed, sb2.SessionKeyHash = nil, nil
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb1, 0))
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb2, 0))
	sb1.Status, sb1.Detail, sb1.UpdatedAt = sandbox.StatusRunning, "up", us(3, 999999)
	ok(t, "update sandbox", s.UpdateSandbox(ctx, sb1, sandbox.StatusStarting))
	w.sandboxHashes = [][]byte{sb1.SessionKeyHash}

	// A conversation that ran: its task READY, events recorded with the agent's state,
	// patched, titled, with a pull request and skills.
	c1 := newConversation(ownerA, "conv-1", 1)
	c1.SandboxID = sb1.ID
	t1 := newTask(c1)
	ok(t, "create conv-1", s.CreateConversation(ctx, c1, t1, []event.Event{newEvent(c1.ID, "ev-1", 1)}, conversation.Claim{}))
	t1.Status, t1.Detail, t1.SandboxID, t1.AgentServerURL, t1.UpdatedAt = conversation.TaskReady, "ready", sb1.ID, "http://127.0.0.1:4000", us(2, 5)
	ok(t, "update task", s.UpdateStartTask(ctx, t1))
	obs := newEvent(c1.ID, "ev-2", 2)
	obs.LLMText = "tool output \x00 with \xff\xfe bytes that are not UTF-8"
	msg := newEvent(c1.ID, "ev-3", 3)
	msg.Kind, msg.Source = event.KindMessage, event.SourceUser
	msg.Body = json.RawMessage(`{"llm_message":  {"role": "user", "content": [{"type": "text", "text": "Déployez la version Ünïcode"}]}, "id": "ev-3"}`)
	msg.Timestamp = us(3, 250)
	ok(t, "record events", recordEvents(s, ctx, c1.ID, []event.Event{obs, msg}, conversation.StateUpdate{
		ExecutionStatus: "running", Metrics: json.RawMessage(`{"accumulated_cost":  1.25 }`),
		ConfirmationPolicy: &confirm.Risky, WaitingForNode: ptr("node-ü"), UpdatedAt: us(4, 1)}))
	ok(t, "patch", s.PatchConversation(ctx, ownerA, c1.ID, conversation.Patch{Public: ptr(true), Title: ptr("Ünïcode Title")}, at(5)))
	ok(t, "add PR", s.AddPRNumber(ctx, ownerA, c1.ID, 99, at(6)))
	ok(t, "put conversation skills", s.PutConversationSkills(ctx, c1.ID, []skill.Skill{
		{Name: "repo", Type: skill.TypeRepo, Content: "Use make.", Source: ".openhands/microagents/repo.md",
			MCPServers: []skill.MCPServer{{Name: "fs", Transport: "stdio", Command: "mcp-fs", Args: []string{"--root", "/workspace"}}}},
		{Name: "deploy", Type: skill.TypeKnowledge, Triggers: []string{"deploy"}, Description: "about deploy", Content: "Deploy with care.", Source: "user"},
	}))
	w.conversations[c1.ID] = ownerA

	// A sub-conversation whose task still works, with messages waiting for it.
	c2 := newConversation(ownerA, "conv-2", 2)
	c2.ParentID, c2.Trigger, c2.Metrics, c2.RequestSealed, c2.SecretsSealed = ptr(c1.ID), ptr("slack"), nil, nil, nil
	c2.SelectedRepository, c2.SelectedBranch, c2.GitProvider, c2.LLMModel, c2.PRNumbers = nil, nil, nil, nil, nil
	c2.SecretNames, c2.Tags, c2.ConfirmationPolicy, c2.WorkDir = nil, nil, confirm.Policy{}, "" // WorkDir: created before conversations worked in ProjectDir
	createConversation(t, s, c2)
	for i, id := range []string{"pm-1", "pm-2"} {
		_, err := s.AddPendingMessage(ctx, ownerA, conversation.PendingMessage{ID: id, ConversationID: c2.ID,
			Message: conversation.Message{Text: "message " + id, ImageURLs: []string{"https://img/" + id}}, CreatedAt: us(3+i, 17)}, 10)
		ok(t, "add pending message", err)
	}
	w.conversations[c2.ID] = ownerA

	// B's conversation, with a sandbox, whose latest pending message was delivered: the
	// counter of pending messages is past the greatest one left.
	c3 := newConversation(ownerB, "conv-3", 3)
	c3.SandboxID = sb2.ID
	createConversation(t, s, c3)
	for _, id := range []string{"pm-3", "pm-4"} {
		_, err := s.AddPendingMessage(ctx, ownerB, conversation.PendingMessage{ID: id, ConversationID: c3.ID,
			Message: conversation.Message{Text: "message " + id}, CreatedAt: at(4)}, 10)
		ok(t, "add pending message", err)
	}
	ok(t, "deliver", s.DeliverPendingMessages(ctx, c3.ID, []string{"pm-4"}, []event.Event{newEvent(c3.ID, "ev-4", 4)},
		conversation.StateUpdate{UpdatedAt: at(5)}))
	w.conversations[c3.ID] = ownerB

	// A conversation deleted with its events: the event counter is past every Seq left.
	gone := newConversation(ownerA, "conv-gone", 4)
	createConversation(t, s, gone)
	last := []event.Event{newEvent(gone.ID, "ev-gone-1", 5), newEvent(gone.ID, "ev-gone-2", 6)}
	ok(t, "append to conv-gone", s.AppendEvents(ctx, last))
	w.lastSeq = last[1].Seq
	ok(t, "delete conv-gone", s.DeleteConversation(ctx, ownerA, gone.ID))

	// Webhooks and deliveries in each state.
	wh1, wh2 := newWebhook(ownerA, "wh-1", 1), newWebhook(ownerB, "wh-2", 2)
	wh1.ConversationID = c1.ID
	ok(t, "create webhook", s.CreateWebhook(ctx, wh1, webhook.MaxPerUser))
	ok(t, "create webhook", s.CreateWebhook(ctx, wh2, webhook.MaxPerUser))
	d1, d2, d3 := newDelivery(wh1, "d-1", 1), newDelivery(wh1, "d-2", 2), newDelivery(wh2, "d-3", 3)
	ok(t, "create deliveries", s.CreateDeliveries(ctx, []webhook.Delivery{d1, d2, d3}))
	d2.Status, d2.Attempts, d2.ResponseCode, d2.NextAttemptAt, d2.UpdatedAt = webhook.StatusDelivered, 2, 200, time.Time{}, us(7, 3)
	ok(t, "update delivery", s.UpdateDelivery(ctx, d2))
	d3.Status, d3.Attempts, d3.Error, d3.NextAttemptAt = webhook.StatusFailed, 5, "connection refused", time.Time{}
	ok(t, "update delivery", s.UpdateDelivery(ctx, d3))
	// An attempt under way, and an endpoint paused for its timeouts.
	claimed, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(1), LeaseUntil: us(50, 7), Limit: 1})
	ok(t, "claim delivery", err)
	equal(t, "claimed", len(claimed), 1)
	ok(t, "endpoint timed out", s.EndpointTimedOut(ctx, ownerB, webhook.EndpointOf(wh2.URL), us(9, 5),
		func(n int) time.Duration { return time.Duration(n) * time.Minute }))
	w.webhooks[wh1.ID], w.webhooks[wh2.ID] = ownerA, ownerB
	_, err = s.KeyringCheck(ctx, func() ([]byte, error) { return []byte("sealed keyring check"), nil })
	ok(t, "keyring check", err)
	return w
}

// copySnapshot is everything the interface reads of a copyWorld. Two stores that hold the
// same rows read the same snapshot, to the byte.
type copySnapshot struct {
	Users             []auth.User
	UsersByID         map[string]auth.User
	KeysByHash        map[string][2]any
	KeysByUser        map[string][]auth.APIKey
	Sessions          map[string][3]any
	Settings          map[string]settings.Record
	Tokens            map[string][]gitprovider.Token
	Secrets           map[string][]customsecret.Secret
	SecretsListed     map[string][]customsecret.Secret
	UserSkills        map[string][]skill.UserSkill
	Specs             []sandbox.Spec
	Sandboxes         []sandbox.Sandbox
	LiveSandboxes     []sandbox.Sandbox
	SandboxesByOwner  map[string][]sandbox.Sandbox
	SandboxesByKey    map[string]sandbox.Sandbox
	SandboxCounts     map[string]int
	Conversations     map[string][]conversation.View
	ConversationByID  map[string]conversation.View
	ConversationCount map[string]int
	TitleSearch       map[string][]string
	SubConversations  map[string]map[string][]string
	Running           []conversation.Conversation
	WithPending       []conversation.Conversation
	Pending           map[string][]conversation.PendingMessage
	Tasks             map[string][]conversation.StartTask
	PendingTasks      []conversation.StartTask
	Events            map[string][]event.Event
	EventsDesc        map[string][]event.Event
	EventCount        map[string]int
	BodySearch        map[string][]string
	ConversationLogs  map[string][]event.Event
	ConversationSkill map[string][]skill.Skill
	Webhooks          map[string][]webhook.Webhook
	Deliveries        map[string][]webhook.Delivery
	NextDelivery      time.Time
	Counts            store.Counts
	KeyringCheck      []byte
}

// snapshotCopyWorld reads everything of w that the interface shows.
func snapshotCopyWorld(t *testing.T, s store.Store, w copyWorld) copySnapshot {
	t.Helper()
	ctx := t.Context()
	snap := copySnapshot{
		UsersByID: map[string]auth.User{}, KeysByHash: map[string][2]any{}, KeysByUser: map[string][]auth.APIKey{},
		Sessions: map[string][3]any{}, Settings: map[string]settings.Record{}, Tokens: map[string][]gitprovider.Token{},
		Secrets: map[string][]customsecret.Secret{}, SecretsListed: map[string][]customsecret.Secret{},
		UserSkills: map[string][]skill.UserSkill{}, SandboxesByOwner: map[string][]sandbox.Sandbox{},
		SandboxesByKey: map[string]sandbox.Sandbox{}, SandboxCounts: map[string]int{},
		Conversations: map[string][]conversation.View{}, ConversationByID: map[string]conversation.View{},
		ConversationCount: map[string]int{}, TitleSearch: map[string][]string{},
		SubConversations: map[string]map[string][]string{}, Pending: map[string][]conversation.PendingMessage{},
		Tasks: map[string][]conversation.StartTask{}, Events: map[string][]event.Event{},
		EventsDesc: map[string][]event.Event{}, EventCount: map[string]int{}, BodySearch: map[string][]string{},
		ConversationLogs: map[string][]event.Event{}, ConversationSkill: map[string][]skill.Skill{},
		Webhooks: map[string][]webhook.Webhook{}, Deliveries: map[string][]webhook.Delivery{},
	}
	var err error
	snap.Users, _ = allPages(t, 1, func(q paging.Query) ([]auth.User, string, error) { return s.ListUsers(ctx, q) })
	for _, h := range w.keyHashes {
		k, u, err := s.LookupAPIKey(ctx, h)
		ok(t, "look up key", err)
		snap.KeysByHash[hex.EncodeToString(h)] = [2]any{k, u}
	}
	for _, h := range w.sessionHashes {
		sess, k, u, err := s.LookupSession(ctx, h)
		ok(t, "look up session", err)
		snap.Sessions[hex.EncodeToString(h)] = [3]any{sess, k, u}
	}
	for _, h := range w.sandboxHashes {
		sb, err := s.SandboxBySessionKeyHash(ctx, h)
		ok(t, "sandbox by key", err)
		snap.SandboxesByKey[hex.EncodeToString(h)] = sb
	}
	for _, o := range w.owners {
		snap.UsersByID[o], err = s.GetUser(ctx, o)
		ok(t, "get user", err)
		snap.KeysByUser[o], err = s.ListAPIKeys(ctx, o)
		ok(t, "list keys", err)
		if set, err := s.GetSettings(ctx, o); !errors.Is(err, settings.ErrNotFound) {
			ok(t, "get settings", err)
			snap.Settings[o] = set
		}
		snap.Tokens[o], err = s.ProviderTokens(ctx, o)
		ok(t, "tokens", err)
		snap.Secrets[o], err = s.CustomSecrets(ctx, o)
		ok(t, "secrets", err)
		snap.SecretsListed[o], _ = allPages(t, 1, func(q paging.Query) ([]customsecret.Secret, string, error) {
			return s.ListCustomSecrets(ctx, o, "", q)
		})
		snap.UserSkills[o], _ = allPages(t, 1, func(q paging.Query) ([]skill.UserSkill, string, error) {
			return s.ListUserSkills(ctx, o, q)
		})
		snap.SandboxesByOwner[o], _ = allPages(t, 1, func(q paging.Query) ([]sandbox.Sandbox, string, error) {
			return s.ListSandboxes(ctx, o, q)
		})
		snap.SandboxCounts[o], err = s.CountSandboxes(ctx, o)
		ok(t, "count sandboxes", err)
		all := conversation.Filter{IncludeSub: true}
		snap.Conversations[o], _ = allPages(t, 1, func(q paging.Query) ([]conversation.View, string, error) {
			return s.ListConversations(ctx, o, all, q)
		})
		snap.ConversationCount[o], err = s.CountConversations(ctx, o, all)
		ok(t, "count conversations", err)
		found, _, err := s.ListConversations(ctx, o, conversation.Filter{TitleContains: "üNÏCODE", IncludeSub: true}, paging.Query{})
		ok(t, "search titles", err)
		snap.TitleSearch[o] = ids(found, viewID)
		var parents []string
		for id, owner := range w.conversations {
			if owner == o {
				parents = append(parents, id)
			}
		}
		slices.Sort(parents)
		snap.SubConversations[o], err = s.SubConversationIDs(ctx, o, parents)
		ok(t, "sub-conversations", err)
		snap.Tasks[o], _ = allPages(t, 1, func(q paging.Query) ([]conversation.StartTask, string, error) {
			return s.ListStartTasks(ctx, o, conversation.TaskFilter{}, conversation.SortCreatedAt, q)
		})
		snap.Events[o], _ = allPages(t, 2, func(q paging.Query) ([]event.Event, string, error) {
			return s.SearchEvents(ctx, o, event.Filter{}, false, q)
		})
		snap.EventsDesc[o], _ = allPages(t, 2, func(q paging.Query) ([]event.Event, string, error) {
			return s.SearchEvents(ctx, o, event.Filter{}, true, q)
		})
		snap.EventCount[o], err = s.CountEvents(ctx, o, event.Filter{})
		ok(t, "count events", err)
		hits, _, err := s.SearchEvents(ctx, o, event.Filter{Body: "ÜNÏCODE"}, false, paging.Query{})
		ok(t, "search bodies", err)
		snap.BodySearch[o] = ids(hits, eventID)
	}
	for id, o := range w.conversations {
		snap.ConversationByID[id], err = s.GetConversation(ctx, o, id)
		ok(t, "get conversation", err)
		snap.ConversationLogs[id], err = s.ConversationEvents(ctx, id, 0)
		ok(t, "conversation events", err)
		snap.Pending[id], err = s.PendingMessages(ctx, id)
		ok(t, "pending messages", err)
		snap.ConversationSkill[id], err = s.ConversationSkills(ctx, id)
		ok(t, "conversation skills", err)
	}
	for id, o := range w.webhooks {
		wh, err := s.ListWebhooks(ctx, o)
		ok(t, "list webhooks", err)
		snap.Webhooks[o] = wh
		snap.Deliveries[id], _ = allPages(t, 1, func(q paging.Query) ([]webhook.Delivery, string, error) {
			return s.ListDeliveries(ctx, o, id, "", q)
		})
	}
	snap.Specs, _ = allPages(t, 1, func(q paging.Query) ([]sandbox.Spec, string, error) { return s.ListSpecs(ctx, q) })
	snap.Sandboxes, err = s.AllSandboxes(ctx)
	ok(t, "all sandboxes", err)
	snap.LiveSandboxes, err = s.LiveSandboxes(ctx)
	ok(t, "live sandboxes", err)
	// Neither list has an order of its own (a store may give them in the order of its heap).
	byID := func(a, b sandbox.Sandbox) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(snap.Sandboxes, byID)
	slices.SortFunc(snap.LiveSandboxes, byID)
	snap.Running, err = s.ConversationsByExecutionStatus(ctx, "running")
	ok(t, "running conversations", err)
	snap.WithPending, err = s.ConversationsWithPendingMessages(ctx)
	ok(t, "conversations with pending messages", err)
	snap.PendingTasks, err = s.PendingStartTasks(ctx)
	ok(t, "pending start tasks", err)
	snap.NextDelivery, err = s.NextDeliveryAt(ctx)
	ok(t, "next delivery", err)
	snap.Counts, err = s.Counts(ctx)
	ok(t, "counts", err)
	snap.KeyringCheck, err = s.KeyringCheck(ctx, func() ([]byte, error) { return []byte("a value of the snapshot's own"), nil })
	ok(t, "keyring check", err)
	return snap
}

// same fails the test unless got and want are deeply equal, field by field, bytes of JSON
// documents and nil beside empty included; it shows the fields that differ.
func same(t *testing.T, what string, got, want copySnapshot) {
	t.Helper()
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	failed := false
	for i := range g.NumField() {
		if reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			continue
		}
		failed = true
		t.Errorf("%s: %s differs:\n got %s\nwant %s", what, g.Type().Field(i).Name, show(g.Field(i).Interface()), show(w.Field(i).Interface()))
	}
	if failed {
		t.FailNow()
	}
}

// show is v in Go syntax, which tells nil from empty and shows JSON bytes as they are.
func show(v any) string { return fmt.Sprintf("%#v", v) }
