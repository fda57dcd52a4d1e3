-- 0005: what current OpenHands clients set on a conversation, and messages sent before it is
-- ready.
--
-- public is NULL until a client sets it; tags is a JSON object of string to string.
-- title_by_user is 1 once the user named the conversation, so a generated title never
-- replaces theirs.
ALTER TABLE conversations ADD COLUMN public INTEGER;
ALTER TABLE conversations ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE conversations ADD COLUMN title_by_user INTEGER NOT NULL DEFAULT 0;

-- A pending message waits, in seq order, for its conversation's start task to be READY; it
-- is deleted in the transaction that appends it to the event log. content is the message's
-- content parts as a JSON array.
CREATE TABLE pending_messages (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX pending_messages_conversation ON pending_messages (conversation_id, seq);
