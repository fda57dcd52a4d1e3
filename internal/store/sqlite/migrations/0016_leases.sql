-- 0016: who runs each conversation, and what they are asked to do (conversation.Lease,
-- conversation.Command). A lease names its holder (a replica's id) and the node of that
-- replica, and lapses at expires_at unless renewed. A command waits for whoever holds the
-- conversation's lease; seq orders them.
CREATE TABLE conversation_leases (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id),
    holder          TEXT NOT NULL,
    node            TEXT NOT NULL,
    expires_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX conversation_leases_holder ON conversation_leases (holder);

CREATE TABLE conversation_commands (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    kind            TEXT NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX conversation_commands_conversation ON conversation_commands (conversation_id, seq);
