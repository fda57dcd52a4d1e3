package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

// oddJSON is valid JSON that a store re-encoding JSON would change: keys out of order, a
// duplicate key, spaces, escapes, a number written long.
const oddJSON = `{"z": 1,  "a" : [1, 2.50, 1e3], "a": "again", "m": {"y": true , "b": null},
	"s": "caf\u00e9 \"quoted\"", "n": 10.000}`

// testJSONKept: the JSON documents clients read back (event bodies, metrics, start task
// requests, settings, webhook payloads) come back byte for byte as stored, so that the API
// answers the same bytes whichever store it runs on.
func testJSONKept(t *testing.T, s store.Store) {
	ctx := t.Context()
	raw := json.RawMessage(oddJSON)
	same := func(what string, got []byte) {
		t.Helper()
		if !bytes.Equal(got, raw) {
			t.Fatalf("%s changed:\n got %s\nwant %s", what, got, raw)
		}
	}

	c := newConversation(ownerA, "conv-json", 1)
	c.Metrics = raw
	task := newTask(c)
	task.Request = raw
	e := newEvent(c.ID, "ev-json", 1)
	e.Body = raw
	ok(t, "create conversation", s.CreateConversation(ctx, c, task, []event.Event{e}, conversation.Claim{}))
	r := newEvent(c.ID, "ev-recorded", 2)
	r.Body = raw
	ok(t, "record event", recordEvents(s, ctx, c.ID, []event.Event{r}, conversation.StateUpdate{Metrics: raw}))

	v, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	same("metrics", v.Metrics)
	vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, paging.Query{})
	ok(t, "list conversations", err)
	same("listed metrics", vs[0].Metrics)
	got, err := s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get start task", err)
	same("start task request", got.Request)
	tasks, _, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, conversation.SortCreatedAt, paging.Query{})
	ok(t, "list start tasks", err)
	same("listed start task request", tasks[0].Request)

	evs, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID}, false, paging.Query{})
	ok(t, "search events", err)
	for _, e := range evs {
		same("searched event body", e.Body)
	}
	read, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "conversation events", err)
	for _, e := range read {
		same("read event body", e.Body)
	}
	byID, err := s.GetEvents(ctx, ownerA, []string{e.ID, r.ID})
	ok(t, "get events", err)
	for _, e := range byID {
		same("got event body", e.Body)
	}

	set := newSettings(ownerA, 1)
	set.Values = raw
	ok(t, "put settings", s.PutSettings(ctx, set))
	gotSet, err := s.GetSettings(ctx, ownerA)
	ok(t, "get settings", err)
	same("settings", gotSet.Values)

	w := newWebhook(ownerA, "wh-1", 1)
	ok(t, "create webhook", s.CreateWebhook(ctx, w, 5))
	d := newDelivery(w, "d-1", 1)
	d.Payload = raw
	ok(t, "create delivery", s.CreateDeliveries(ctx, []webhook.Delivery{d}))
	gotD, err := s.GetDelivery(ctx, ownerA, w.ID, d.ID)
	ok(t, "get delivery", err)
	same("delivery payload", gotD.Payload)
	claimed, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(1), LeaseUntil: at(2), Limit: 1})
	ok(t, "claim delivery", err)
	same("claimed delivery payload", claimed[0].Payload)
}

// oddIDs differ only where byte order and a locale's order disagree: case, punctuation, and
// a letter beyond ASCII. Byte order is the order of the SQLite store's BINARY collation.
var oddIDs = []string{"id-b", "id-B", "id-_", "id-a", "id-A", "id-\u00e9", "id-Z", "id-0"}

// byteOrder is ids sorted byte by byte, reversed when desc.
func byteOrder(ids []string, desc bool) []string {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, strings.Compare)
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

// testByteOrder: listings break ties, and page, by id or name in byte order (upper case
// before lower case, punctuation by its code), whatever the database's locale would say.
func testByteOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	prefixed := func(prefix string, desc bool) []string {
		var out []string
		for _, id := range byteOrder(oddIDs, desc) {
			out = append(out, prefix+id)
		}
		return out
	}
	for _, id := range oddIDs {
		ok(t, "create user", s.CreateUser(ctx, newUser("user-"+id, 1)))
		ok(t, "put spec", s.PutSpec(ctx, newSpec("spec-"+id, 1)))
		sb := newSandbox(ownerA, "sb-"+id, 1, sandbox.StatusRunning)
		sb.SessionKeyHash = nil
		ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
		createConversation(t, s, newConversation(ownerA, "conv-"+id, 1))
		ok(t, "create skill", s.CreateUserSkill(ctx, newUserSkill(ownerA, "skill-"+id, 1), 100))
		ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("SECRET-"+id, 1), customsecret.MaxPerUser))
	}
	w := newWebhook(ownerA, "wh", 1)
	ok(t, "create webhook", s.CreateWebhook(ctx, w, 100))
	var ds []webhook.Delivery
	for _, id := range oddIDs {
		ds = append(ds, newDelivery(w, "d-"+id, 1))
	}
	ok(t, "create deliveries", s.CreateDeliveries(ctx, ds))
	var tokens []gitprovider.Token
	for _, id := range oddIDs {
		tokens = append(tokens, gitprovider.Token{Provider: "p-" + id, UpdatedAt: at(1)})
	}
	ok(t, "replace tokens", s.ReplaceProviderTokens(ctx, ownerA, tokens))

	type listing struct {
		name string
		list func(q paging.Query) ([]string, string, error)
		want []string
	}
	listed := func(name string, want []string, list func(q paging.Query) ([]string, string, error)) listing {
		return listing{name, list, want}
	}
	for _, l := range []listing{
		listed("users", prefixed("user-", false), func(q paging.Query) ([]string, string, error) {
			us, next, err := s.ListUsers(ctx, q)
			return ids(us, func(u auth.User) string { return u.ID }), next, err
		}),
		listed("specs", prefixed("spec-", false), func(q paging.Query) ([]string, string, error) {
			sps, next, err := s.ListSpecs(ctx, q)
			return ids(sps, func(sp sandbox.Spec) string { return sp.ID }), next, err
		}),
		listed("sandboxes", prefixed("sb-", true), func(q paging.Query) ([]string, string, error) {
			sbs, next, err := s.ListSandboxes(ctx, ownerA, q)
			return ids(sbs, func(sb sandbox.Sandbox) string { return sb.ID }), next, err
		}),
		listed("conversations", prefixed("conv-", true), func(q paging.Query) ([]string, string, error) {
			vs, next, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, q)
			return ids(vs, viewID), next, err
		}),
		listed("start tasks", prefixed("task-conv-", false), func(q paging.Query) ([]string, string, error) {
			ts, next, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, conversation.SortCreatedAt, q)
			return ids(ts, taskID), next, err
		}),
		listed("start tasks, newest first", prefixed("task-conv-", true), func(q paging.Query) ([]string, string, error) {
			ts, next, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, conversation.SortUpdatedAtDesc, q)
			return ids(ts, taskID), next, err
		}),
		listed("skills", prefixed("skill-", false), func(q paging.Query) ([]string, string, error) {
			us, next, err := s.ListUserSkills(ctx, ownerA, q)
			return ids(us, func(u skill.UserSkill) string { return u.Name }), next, err
		}),
		listed("secrets", prefixed("SECRET-", false), func(q paging.Query) ([]string, string, error) {
			ss, next, err := s.ListCustomSecrets(ctx, ownerA, "", q)
			return ids(ss, func(sec customsecret.Secret) string { return sec.Name }), next, err
		}),
		listed("deliveries", prefixed("d-", true), func(q paging.Query) ([]string, string, error) {
			ds, next, err := s.ListDeliveries(ctx, ownerA, w.ID, "", q)
			return ids(ds, func(d webhook.Delivery) string { return d.ID }), next, err
		}),
	} {
		for _, limit := range []int{1, 3, 100} {
			got, _ := allPages(t, limit, l.list)
			equal(t, fmt.Sprintf("%s with limit %d", l.name, limit), got, l.want)
		}
	}
	ts, err := s.ProviderTokens(ctx, ownerA)
	ok(t, "provider tokens", err)
	equal(t, "provider tokens", ids(ts, func(tk gitprovider.Token) string { return tk.Provider }), prefixed("p-", false))
	secrets, err := s.CustomSecrets(ctx, ownerA)
	ok(t, "secrets", err)
	equal(t, "secrets", ids(secrets, func(sec customsecret.Secret) string { return sec.Name }), prefixed("SECRET-", false))
}
