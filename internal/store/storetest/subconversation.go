package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/store"
)

// testSubConversations: children are found per parent, oldest first, only the owner's.
func testSubConversations(t *testing.T, s store.Store) {
	ctx := t.Context()
	parent := newConversation(ownerA, "parent", 1)
	lonely := newConversation(ownerA, "lonely", 2)
	createConversation(t, s, parent)
	createConversation(t, s, lonely)
	for i, id := range []string{"child-b", "child-a"} { // created in this order
		c := newConversation(ownerA, id, 10+i)
		c.ParentID = ptr(parent.ID)
		createConversation(t, s, c)
	}
	// Another owner's conversation naming the parent is not a child of it for ownerA.
	stranger := newConversation(ownerB, "stranger", 20)
	stranger.ParentID = ptr(parent.ID)
	createConversation(t, s, stranger)

	got, err := s.SubConversationIDs(ctx, ownerA, []string{parent.ID, lonely.ID, "missing"})
	ok(t, "sub-conversations", err)
	equal(t, "sub-conversations", got, map[string][]string{parent.ID: {"child-b", "child-a"}})

	got, err = s.SubConversationIDs(ctx, ownerB, []string{parent.ID})
	ok(t, "sub-conversations of another owner", err)
	equal(t, "sub-conversations of another owner", got, map[string][]string{parent.ID: {"stranger"}})

	got, err = s.SubConversationIDs(ctx, ownerA, nil)
	ok(t, "sub-conversations of nothing", err)
	equal(t, "sub-conversations of nothing", got, map[string][]string{})
}
