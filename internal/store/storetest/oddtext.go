package storetest

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

// testOddText: what a tool printed is kept as it came, NUL characters and bytes that are not
// UTF-8 included (the text the model was shown); a message whose JSON encodes a NUL
// character is stored, and found by its text.
func testOddText(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-odd", 1)
	createConversation(t, s, c)
	obs := newEvent(c.ID, "ev-output", 1)
	obs.LLMText = "binary\x00output \xff\xfe end"
	msg := newEvent(c.ID, "ev-message", 2)
	msg.Kind, msg.Body = event.KindMessage, json.RawMessage(`{"llm_message": {"role": "user", "content": [{"type": "text", "text": "nul \u0000 in the Middle"}]}}`)
	ok(t, "record", recordEvents(s, ctx, c.ID, []event.Event{obs, msg}, conversation.StateUpdate{}))
	got, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "read the log", err)
	if len(got) != 2 || got[0].LLMText != obs.LLMText {
		t.Fatalf("tool output read back as %q, want %q", got[0].LLMText, obs.LLMText)
	}
	found, _, err := s.SearchEvents(ctx, ownerA, event.Filter{ConversationID: c.ID, Body: "in the middle"}, false, paging.Query{})
	ok(t, "search the message", err)
	if len(found) != 1 || found[0].ID != msg.ID || string(found[0].Body) != string(msg.Body) {
		t.Fatalf("search found %v, want the message as stored", ids(found, eventID))
	}
}
