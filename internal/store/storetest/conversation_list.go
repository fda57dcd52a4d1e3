package storetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testConversationFilters(t *testing.T, s store.Store) {
	ctx := t.Context()
	mk := func(owner, id, title string, i int, edit func(*conversation.Conversation)) {
		c := newConversation(owner, id, i)
		c.Title = title
		c.UpdatedAt = at(100 - i) // updated in the reverse order of creation
		if edit != nil {
			edit(&c)
		}
		createConversation(t, s, c)
	}
	mk(ownerA, "c1", "Fix 100% of the bugs", 1, nil)
	mk(ownerA, "c2", "Fix 1000 bugs", 2, nil)
	mk(ownerA, "c3", "snake_case rename", 3, nil)
	mk(ownerA, "c4", "snakeXcase rename", 4, nil)
	mk(ownerA, "c5", "HELLO Wörld", 5, func(c *conversation.Conversation) {
		c.SelectedRepository = ptr("acme/web")
		c.Trigger = ptr("slack")
	})
	mk(ownerA, "c6", "hello sub-conversation", 6, func(c *conversation.Conversation) { c.ParentID = ptr("c5") })
	mk(ownerB, "b1", "hello from B", 7, nil)

	for _, tc := range []struct {
		name string
		f    conversation.Filter
		want []string
	}{
		{"no filter excludes subs", conversation.Filter{}, []string{"c5", "c4", "c3", "c2", "c1"}},
		{"include subs", conversation.Filter{IncludeSub: true}, []string{"c6", "c5", "c4", "c3", "c2", "c1"}},
		{"percent is literal", conversation.Filter{TitleContains: "%"}, []string{"c1"}},
		{"percent in the middle", conversation.Filter{TitleContains: "0% o"}, []string{"c1"}},
		{"underscore is literal", conversation.Filter{TitleContains: "_"}, []string{"c3"}},
		{"underscore in the middle", conversation.Filter{TitleContains: "e_c"}, []string{"c3"}},
		{"case-insensitive", conversation.Filter{TitleContains: "hello"}, []string{"c5"}},
		{"case-insensitive beyond ascii", conversation.Filter{TitleContains: "WÖRLD"}, []string{"c5"}},
		{"title with subs", conversation.Filter{TitleContains: "HeLLo", IncludeSub: true}, []string{"c6", "c5"}},
		{"title matches nothing", conversation.Filter{TitleContains: "nothing like it"}, nil},
		{"created gte", conversation.Filter{CreatedGTE: ptr(at(3))}, []string{"c5", "c4", "c3"}},
		{"created lt", conversation.Filter{CreatedLT: ptr(at(3))}, []string{"c2", "c1"}},
		{"created range", conversation.Filter{CreatedGTE: ptr(at(2)), CreatedLT: ptr(at(4))}, []string{"c3", "c2"}},
		{"updated gte", conversation.Filter{UpdatedGTE: ptr(at(97))}, []string{"c3", "c2", "c1"}},
		{"updated lt", conversation.Filter{UpdatedLT: ptr(at(97))}, []string{"c5", "c4"}},
		{"updated range with subs", conversation.Filter{UpdatedGTE: ptr(at(94)), UpdatedLT: ptr(at(96)), IncludeSub: true}, []string{"c6", "c5"}},
		{"repository", conversation.Filter{SelectedRepository: "acme/web"}, []string{"c5"}},
		{"repository matches exactly", conversation.Filter{SelectedRepository: "acme"}, nil},
		{"trigger", conversation.Filter{Trigger: "slack"}, []string{"c5"}},
		{"trigger matches exactly", conversation.Filter{Trigger: "Slack"}, nil},
		{"everything", conversation.Filter{TitleContains: "fix", CreatedGTE: ptr(at(1)), CreatedLT: ptr(at(2)), UpdatedGTE: ptr(at(0)), SelectedRepository: "acme/api"}, []string{"c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, next, err := s.ListConversations(ctx, ownerA, tc.f, paging.Query{})
			ok(t, "list", err)
			if next != "" {
				t.Fatalf("next page %q, want none", next)
			}
			if got := ids(vs, viewID); !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
			n, err := s.CountConversations(ctx, ownerA, tc.f)
			ok(t, "count", err)
			if n != len(tc.want) {
				t.Fatalf("counted %d, want %d", n, len(tc.want))
			}
		})
	}
}

// newestFirst orders conversation ids as listings must: created_at, then id, descending.
func newestFirst(cs []conversation.Conversation) []string {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b conversation.Conversation) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return ids(cs, func(c conversation.Conversation) string { return c.ID })
}

func testConversationPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	var mine []conversation.Conversation
	for i := range 250 {
		// Every three conversations share a creation time, and ids do not follow time.
		c := newConversation(ownerA, fmt.Sprintf("conv-%03d", (i*37)%250), i/3)
		createConversation(t, s, c)
		mine = append(mine, c)
		if i%10 == 0 {
			createConversation(t, s, newConversation(ownerB, fmt.Sprintf("conv-b-%03d", i), i/3))
		}
	}
	want := newestFirst(mine)
	for _, limit := range []int{100, 7, 1} {
		got, pages := allPages(t, limit, func(q paging.Query) ([]conversation.View, string, error) {
			return s.ListConversations(ctx, ownerA, conversation.Filter{}, q)
		})
		if gotIDs := ids(got, viewID); !slices.Equal(gotIDs, want) {
			t.Fatalf("limit %d: listed %d conversations in a different order than the %d expected:\n got %v\nwant %v",
				limit, len(gotIDs), len(want), gotIDs, want)
		}
		if pages != pagesFor(len(want), limit) {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, pagesFor(len(want), limit))
		}
	}

	// Limits are normalised: 0 means the default, more than the maximum means the maximum.
	for _, limit := range []int{0, -1, paging.MaxLimit + 1} {
		vs, next, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, paging.Query{Limit: limit})
		ok(t, "list", err)
		wantLen := paging.Query{Limit: limit}.Normalize().Limit
		if len(vs) != wantLen || next == "" {
			t.Fatalf("limit %d: %d items (next %q), want %d and a next page", limit, len(vs), next, wantLen)
		}
	}
	n, err := s.CountConversations(ctx, ownerA, conversation.Filter{})
	ok(t, "count", err)
	if n != len(mine) {
		t.Fatalf("count %d, want %d", n, len(mine))
	}
}

func testConversationPagingWithInserts(t *testing.T, s store.Store) {
	ctx := t.Context()
	var cs []conversation.Conversation
	for i := range 30 {
		c := newConversation(ownerA, fmt.Sprintf("conv-%02d", i), 100+i/2)
		createConversation(t, s, c)
		cs = append(cs, c)
	}
	list := func(cursor string) ([]conversation.View, string) {
		vs, next, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, paging.Query{Cursor: cursor, Limit: 10})
		ok(t, "list", err)
		return vs, next
	}
	got, next := list("")
	last := got[len(got)-1].Conversation

	// Between pages: rows newer than the cursor (which must not show up now), rows older
	// than it (which must), rows tied with it on both sides of its id, and a deletion.
	inserted := []conversation.Conversation{
		newConversation(ownerA, "conv-newer", 500),
		newConversation(ownerA, "conv-older", 1),
		newConversation(ownerA, last.ID+"z", 0),
		newConversation(ownerA, last.ID[:len(last.ID)-1], 0),
	}
	inserted[2].CreatedAt, inserted[3].CreatedAt = last.CreatedAt, last.CreatedAt
	for _, c := range inserted {
		createConversation(t, s, c)
	}
	deleted := cs[5].ID // on a later page
	ok(t, "delete", s.DeleteConversation(ctx, ownerA, deleted))

	for next != "" {
		var vs []conversation.View
		vs, next = list(next)
		got = append(got, vs...)
	}
	gotIDs := ids(got, viewID)
	seen := map[string]bool{}
	for _, id := range gotIDs {
		if seen[id] {
			t.Fatalf("%s listed twice: %v", id, gotIDs)
		}
		seen[id] = true
	}
	for _, c := range cs {
		if !seen[c.ID] && c.ID != deleted {
			t.Fatalf("%s was skipped: %v", c.ID, gotIDs)
		}
	}
	for _, id := range []string{"conv-newer", inserted[2].ID} {
		if seen[id] {
			t.Fatalf("%s, inserted before the cursor, was listed on a later page", id)
		}
	}
	for _, id := range []string{"conv-older", inserted[3].ID} {
		if !seen[id] {
			t.Fatalf("%s, inserted after the cursor, was not listed", id)
		}
	}
	if seen[deleted] {
		t.Fatalf("deleted %s was listed", deleted)
	}
	// And the whole is in order.
	if !slices.IsSortedFunc(got, func(a, b conversation.View) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	}) {
		t.Fatalf("pages out of order: %v", gotIDs)
	}
}

func testBadCursor(t *testing.T, s store.Store) {
	ctx := t.Context()
	createConversation(t, s, newConversation(ownerA, "conv-1", 1))
	for _, cursor := range []string{
		"not a cursor!",
		base64.RawURLEncoding.EncodeToString([]byte("no separator")),
		base64.RawURLEncoding.EncodeToString([]byte("12345:")),
		base64.RawURLEncoding.EncodeToString([]byte("not a time:conv-1")),
	} {
		q := paging.Query{Cursor: cursor}
		checks := map[string]error{}
		_, _, checks["ListUsers"] = s.ListUsers(ctx, q)
		_, _, checks["ListSpecs"] = s.ListSpecs(ctx, q)
		_, _, checks["ListCustomSecrets"] = s.ListCustomSecrets(ctx, ownerA, "", q)
		_, _, checks["ListSandboxes"] = s.ListSandboxes(ctx, ownerA, q)
		_, _, checks["ListConversations"] = s.ListConversations(ctx, ownerA, conversation.Filter{}, q)
		_, _, checks["ListStartTasks"] = s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, conversation.SortCreatedAtDesc, q)
		for name, err := range checks {
			is(t, fmt.Sprintf("%s with cursor %q", name, cursor), err, paging.ErrBadCursor)
		}
	}
}
