-- 0004: who runs each conversation, and what they are asked to do (conversation.Lease,
-- conversation.Command). A lease names its holder (a replica's id) and the node of that
-- replica, and lapses at expires_at (the database's clock) unless renewed. A command waits
-- for whoever holds the conversation's lease; seq orders them.
CREATE TABLE conversation_leases (
    conversation_id text COLLATE "C" PRIMARY KEY REFERENCES conversations (id),
    holder          text COLLATE "C" NOT NULL,
    node            text COLLATE "C" NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX conversation_leases_holder ON conversation_leases (holder);

CREATE TABLE conversation_commands (
    seq             bigserial PRIMARY KEY,
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id),
    kind            text NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX conversation_commands_conversation ON conversation_commands (conversation_id, seq);
