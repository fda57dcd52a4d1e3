package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// testConversationsOfSandbox: Filter.SandboxID lists exactly the owner's conversations that
// use the sandbox.
func testConversationsOfSandbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"on-a-1", "on-a-2", "on-b"} {
		c := newConversation(ownerA, id, i+1)
		c.SandboxID = "sb-a"
		if id == "on-b" {
			c.SandboxID = "sb-b"
		}
		createConversation(t, s, c)
	}
	stranger := newConversation(ownerB, "stranger", 9)
	stranger.SandboxID = "sb-a"
	createConversation(t, s, stranger)

	vs, _, err := s.ListConversations(ctx, ownerA, conversation.Filter{SandboxID: "sb-a", IncludeSub: true}, paging.Query{})
	ok(t, "list conversations of a sandbox", err)
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	equal(t, "conversations of sb-a", ids, []string{"on-a-2", "on-a-1"})
	n, err := s.CountConversations(ctx, ownerA, conversation.Filter{SandboxID: "sb-b", IncludeSub: true})
	ok(t, "count conversations of a sandbox", err)
	equal(t, "count of sb-b", n, 1)
}
